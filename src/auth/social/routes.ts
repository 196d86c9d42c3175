/**
 * Identity routes: social sign-in (auth.signInSocial, auth.callback) with GitHub and Google.
 * sign-in/social answers the provider's address and keeps the flow's state in cookies; the
 * callback checks the state (400 when it is missing or forged), then signs the person in and
 * redirects to callbackURL, or redirects to errorCallbackURL with `error` (docs/social-sign-in.md
 * lists the codes). Only providers configured on this deployment are enabled.
 */
import type { AuthContext, AuthHandlers } from '../../context.ts';
import { timingSafeEqual } from 'node:crypto';
import { ApiError, badRequest } from '../../contract/errors.ts';
import { createSession, isBanned, sessionExpiry } from '../sessions.ts';
import { clearedFlowCookies, flowCookies, readFlow } from './flow-cookies.ts';
import type { ProviderName } from './provider.ts';
import { socialProvider } from './providers.ts';
import { allowedOrigins } from '../trusted-origins.ts';
import { defaultRedirect, isAllowedRedirect, withError } from '../redirect-targets.ts';
import { findOrCreateSocialUser } from './social-accounts.ts';

export const socialRoutes = {
  'auth.signInSocial': async (input, ctx) => {
    const { config } = ctx.services;
    const client = config[input.provider];
    if (!client) throw new ApiError('PRECONDITION_FAILED', { message: `Sign-in with ${input.provider} is not enabled on this deployment.` });
    const trusted = allowedOrigins(config);
    for (const field of ['callbackURL', 'errorCallbackURL'] as const) {
      const value = input[field];
      if (value !== undefined && !isAllowedRedirect(value, trusted)) {
        throw badRequest([{ path: [field], message: 'must be a path or an address on a trusted origin' }]);
      }
    }
    const callbackURL = input.callbackURL ?? defaultRedirect(config);
    const started = await socialProvider(input.provider, client).start(redirectUri(ctx, input.provider));
    return {
      body: { url: started.url.href, redirect: true },
      cookies: flowCookies({
        provider: input.provider,
        state: started.state,
        callbackURL,
        errorCallbackURL: input.errorCallbackURL ?? callbackURL,
        ...(started.codeVerifier ? { codeVerifier: started.codeVerifier } : {}),
        ...(started.nonce ? { nonce: started.nonce } : {}),
      }),
    };
  },

  'auth.callback': async (input, ctx) => {
    const { config } = ctx.services;
    const client = config[input.provider];
    if (!client) throw badRequest([{ path: ['provider'], message: `sign-in with ${input.provider} is not enabled on this deployment` }]);
    const flow = readFlow(ctx);
    if (!flow || flow.provider !== input.provider || !input.state || !sameText(flow.state, input.state)) {
      throw badRequest([{ path: ['state'], message: 'the sign-in state is missing, expired or does not match: start the sign-in again' }], 'The sign-in could not be verified. Start it again.');
    }
    // The cookies could have been planted by someone else: their targets are checked again.
    const trusted = allowedOrigins(config);
    const success = isAllowedRedirect(flow.callbackURL, trusted) ? flow.callbackURL : defaultRedirect(config);
    const failure = isAllowedRedirect(flow.errorCallbackURL, trusted) ? flow.errorCallbackURL : success;
    const cookies = clearedFlowCookies();
    const fail = (code: string) => ({ redirect: withError(failure, code), cookies });

    if (input.error) return fail(input.error.slice(0, 100));
    if (!input.code) return fail('invalid_request');

    let profile;
    try {
      profile = await socialProvider(input.provider, client).finish({
        code: input.code,
        state: input.state,
        redirectUri: redirectUri(ctx, input.provider),
        ...(flow.codeVerifier ? { codeVerifier: flow.codeVerifier } : {}),
        ...(flow.nonce ? { nonce: flow.nonce } : {}),
        ...(input.iss ? { iss: input.iss } : {}),
      });
    } catch (error) {
      ctx.log.warn({ err: error, provider: input.provider }, 'social sign-in failed at the provider');
      return fail('SIGN_IN_FAILED');
    }

    const now = ctx.services.now();
    const outcome = await findOrCreateSocialUser(ctx.services.db.sql, { provider: input.provider, profile, adminEmails: config.adminEmails, now });
    if ('refused' in outcome) {
      ctx.log.info({ provider: input.provider }, 'social sign-in refused: the provider does not vouch for the email');
      return fail(outcome.refused);
    }
    const { user, how } = outcome;
    if (isBanned(user, now)) return fail('BANNED_USER');
    const { token, session } = await createSession(ctx.services.db.sql, { userId: user.id, now, ip: ctx.ip, userAgent: ctx.userAgent });
    ctx.log.info({ provider: input.provider, userId: user.id, how }, 'social sign-in');
    return { redirect: success, session: { token, expiresAt: sessionExpiry(session) }, cookies };
  },
} satisfies AuthHandlers;

function redirectUri(ctx: AuthContext, provider: ProviderName): string {
  return `${ctx.services.config.publicUrl}/api/auth/callback/${provider}`;
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
