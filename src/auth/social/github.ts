/**
 * GitHub: OAuth 2.0 authorization code flow (GitHub publishes no discovery document, so the
 * server metadata is written out here), then the REST API for the profile and the primary email.
 */
import * as oauth from 'oauth4webapi';
import type { OAuthClient } from '../../config.ts';
import { isLoopbackHttp, PROVIDER_TIMEOUT_MS } from './provider-http.ts';
import type { ProviderProfile, SocialProvider } from './provider.ts';

interface GitHubUser {
  id: number;
  login: string;
  name: string | null;
  avatar_url: string | null;
}

interface GitHubEmail {
  email: string;
  primary: boolean;
  verified: boolean;
}

export function githubProvider(config: OAuthClient): SocialProvider {
  const as: oauth.AuthorizationServer = {
    issuer: config.issuer,
    authorization_endpoint: `${config.issuer}/login/oauth/authorize`,
    token_endpoint: `${config.issuer}/login/oauth/access_token`,
  };
  const client: oauth.Client = { client_id: config.clientId };
  const options = { [oauth.allowInsecureRequests]: isLoopbackHttp(config.issuer), signal: () => AbortSignal.timeout(PROVIDER_TIMEOUT_MS) };

  return {
    async start(redirectUri) {
      const state = oauth.generateRandomState();
      const url = new URL(as.authorization_endpoint!);
      url.search = new URLSearchParams({ client_id: config.clientId, redirect_uri: redirectUri, scope: 'read:user user:email', state }).toString();
      return { url, state };
    },

    async finish({ code, state, redirectUri }) {
      const params = oauth.validateAuthResponse(as, client, new URLSearchParams({ code, state }), state);
      const response = await oauth.authorizationCodeGrantRequest(as, client, oauth.ClientSecretPost(config.clientSecret), params, redirectUri, oauth.nopkce, options);
      const tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
      const user = await api<GitHubUser>(config.apiUrl, '/user', tokens.access_token);
      const emails = await api<GitHubEmail[]>(config.apiUrl, '/user/emails', tokens.access_token);
      if (typeof user.id !== 'number' || !Array.isArray(emails)) throw new Error('GitHub answered an unexpected profile');
      // Only the primary address counts, and only when GitHub has verified it.
      const primary = emails.find((entry) => entry.primary);
      const profile: ProviderProfile = {
        accountId: String(user.id),
        email: primary?.email ?? null,
        emailVerified: primary?.verified === true,
        name: (user.name ?? '').trim() || user.login,
        image: user.avatar_url ?? null,
      };
      return profile;
    },
  };
}

async function api<T>(base: string, path: string, token: string): Promise<T> {
  const response = await fetch(`${base}${path}`, {
    headers: {
      authorization: `Bearer ${token}`,
      accept: 'application/vnd.github+json',
      'x-github-api-version': '2022-11-28',
      'user-agent': 'workspace-api',
    },
    signal: AbortSignal.timeout(PROVIDER_TIMEOUT_MS),
  });
  if (!response.ok) throw new Error(`GitHub ${path} answered ${response.status}`);
  return (await response.json()) as T;
}
