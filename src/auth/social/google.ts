/**
 * Google: OpenID Connect authorization code flow with PKCE (S256) and a nonce. The server
 * metadata comes from the issuer's discovery document (cached per issuer); the ID token's claims
 * (issuer, audience, expiry, nonce) and its signature (against the issuer's JWKS) are checked,
 * and the userinfo endpoint fills in the profile.
 */
import * as oauth from 'oauth4webapi';
import type { OAuthClient } from '../../config.ts';
import { isLoopbackHttp, PROVIDER_TIMEOUT_MS } from './provider-http.ts';
import type { SocialProvider } from './provider.ts';

const discovered = new Map<string, Promise<oauth.AuthorizationServer>>();

export function googleProvider(config: OAuthClient): SocialProvider {
  const client: oauth.Client = { client_id: config.clientId };
  const options = { [oauth.allowInsecureRequests]: isLoopbackHttp(config.issuer), signal: () => AbortSignal.timeout(PROVIDER_TIMEOUT_MS) };

  function server(): Promise<oauth.AuthorizationServer> {
    let pending = discovered.get(config.issuer);
    if (!pending) {
      const issuer = new URL(config.issuer);
      pending = oauth.discoveryRequest(issuer, { ...options, algorithm: 'oidc' }).then((response) => oauth.processDiscoveryResponse(issuer, response));
      // A failed discovery is tried again on the next sign-in rather than remembered.
      pending.catch(() => discovered.delete(config.issuer));
      discovered.set(config.issuer, pending);
    }
    return pending;
  }

  return {
    async start(redirectUri) {
      const as = await server();
      const state = oauth.generateRandomState();
      const nonce = oauth.generateRandomNonce();
      const codeVerifier = oauth.generateRandomCodeVerifier();
      const url = new URL(as.authorization_endpoint!);
      url.search = new URLSearchParams({
        client_id: config.clientId,
        redirect_uri: redirectUri,
        response_type: 'code',
        scope: 'openid email profile',
        state,
        nonce,
        code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: 'S256',
      }).toString();
      return { url, state, codeVerifier, nonce };
    },

    async finish({ code, state, redirectUri, codeVerifier, nonce, iss }) {
      if (!codeVerifier || !nonce) throw new Error('the PKCE verifier or nonce cookie is missing');
      const as = await server();
      // RFC 9207: when Google names the issuer in its answer, oauth4webapi checks it is ours.
      const params = oauth.validateAuthResponse(as, client, new URLSearchParams({ code, state, ...(iss ? { iss } : {}) }), state);
      const response = await oauth.authorizationCodeGrantRequest(as, client, oauth.ClientSecretPost(config.clientSecret), params, redirectUri, codeVerifier, options);
      const tokens = await oauth.processAuthorizationCodeResponse(as, client, response, { expectedNonce: nonce, requireIdToken: true });
      // The token came straight from Google over TLS; checking its signature too costs one cached JWKS fetch.
      await oauth.validateApplicationLevelSignature(as, response, options);
      const claims = oauth.getValidatedIdTokenClaims(tokens)!;
      const userinfo = await oauth.processUserInfoResponse(as, client, claims.sub, await oauth.userInfoRequest(as, client, tokens.access_token, options));
      const email = stringClaim(claims.email) ?? stringClaim(userinfo.email);
      const verified = claims.email_verified ?? userinfo.email_verified;
      return {
        accountId: claims.sub,
        email,
        emailVerified: verified === true || verified === 'true',
        name: stringClaim(userinfo.name) ?? stringClaim(claims.name) ?? email?.split('@')[0] ?? 'Google user',
        image: stringClaim(userinfo.picture) ?? stringClaim(claims.picture),
      };
    },
  };
}

function stringClaim(value: unknown): string | null {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
}
