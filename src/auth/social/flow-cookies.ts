/**
 * The state of one social sign-in between sign-in/social and the callback, kept in the browser:
 * short-lived HttpOnly cookies on /api/auth (SameSite=Lax, so the provider's top-level redirect
 * back still carries them). The callback clears them whatever the outcome.
 */
import type { AuthAnswer, AuthContext } from '../../context.ts';
import type { ProviderName } from './provider.ts';

const MAX_AGE_SECONDS = 600;
const PATH = '/api/auth';
const STATE = 'oauth_state';
const FLOW = 'oauth_flow';
const VERIFIER = 'oauth_code_verifier';
const NONCE = 'oauth_nonce';

export interface Flow {
  provider: ProviderName;
  state: string;
  callbackURL: string;
  errorCallbackURL: string;
  /** PKCE verifier and OpenID nonce (Google). */
  codeVerifier?: string;
  nonce?: string;
}

type Cookies = NonNullable<AuthAnswer<unknown>['cookies']>;

export function flowCookies(flow: Flow): Cookies {
  const cookie = (name: string, value: string) => ({ name, value, maxAgeSeconds: MAX_AGE_SECONDS, path: PATH });
  const cookies = [cookie(STATE, flow.state), cookie(FLOW, JSON.stringify({ provider: flow.provider, callbackURL: flow.callbackURL, errorCallbackURL: flow.errorCallbackURL }))];
  if (flow.codeVerifier) cookies.push(cookie(VERIFIER, flow.codeVerifier));
  if (flow.nonce) cookies.push(cookie(NONCE, flow.nonce));
  return cookies;
}

export function clearedFlowCookies(): Cookies {
  return [STATE, FLOW, VERIFIER, NONCE].map((name) => ({ name, value: '', maxAgeSeconds: 0, path: PATH }));
}

/** The flow the cookies describe, or null when they are missing or not ours. */
export function readFlow(ctx: Pick<AuthContext, 'cookie'>): Flow | null {
  const state = ctx.cookie(STATE);
  const raw = ctx.cookie(FLOW);
  if (!state || !raw) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null) return null;
  const { provider, callbackURL, errorCallbackURL } = parsed as Record<string, unknown>;
  if ((provider !== 'github' && provider !== 'google') || typeof callbackURL !== 'string' || typeof errorCallbackURL !== 'string') return null;
  const codeVerifier = ctx.cookie(VERIFIER);
  const nonce = ctx.cookie(NONCE);
  return { provider, state, callbackURL, errorCallbackURL, ...(codeVerifier ? { codeVerifier } : {}), ...(nonce ? { nonce } : {}) };
}
