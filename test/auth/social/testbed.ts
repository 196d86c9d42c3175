/**
 * What the social sign-in tests share: the fake providers, an app configured for both, and
 * helpers that walk a flow the way a browser would (sign-in/social, then the callback with the
 * flow cookies). Call useSocialTestbed() once at the top of a test file.
 */
import { afterAll, beforeAll, expect } from 'vitest';
import { startTestServer, type TestServer } from '../../support/server.ts';
import { startFakeProviders, type FakeProviders, type GitHubProfile, type GoogleProfile } from './fake-providers.ts';

let providers: FakeProviders;
let server: TestServer;
let nextId = 1000;

export const testbed = {
  get server(): TestServer {
    return server;
  },
  get providers(): FakeProviders {
    return providers;
  },
};

export function useSocialTestbed(): void {
  beforeAll(async () => {
    providers = await startFakeProviders();
    server = await startTestServer({
      env: {
        ...providers.env,
        AUTH_RATE_LIMIT_PER_MINUTE: '1000',
        PUBLIC_URL: 'http://127.0.0.1:3999',
        WEB_URL: 'https://app.example.com',
        ADMIN_EMAILS: 'Boss@Example.com',
      },
    });
  });
  afterAll(async () => {
    await server?.close();
    await providers?.close();
  });
}

export interface Started {
  url: URL;
  state: string;
  /** The flow cookies as a Cookie request header. */
  cookie: string;
  setCookies: string[];
}

export async function start(provider: 'github' | 'google', extra: Record<string, string> = {}): Promise<Started> {
  const response = await server.fetch('/api/auth/sign-in/social', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ provider, ...extra }),
  });
  expect(response.status).toBe(200);
  const body = await response.json();
  expect(body.redirect).toBe(true);
  const url = new URL(body.url);
  const setCookies = response.headers.getSetCookie();
  const cookie = setCookies.map((line) => line.split(';')[0]).join('; ');
  return { url, state: url.searchParams.get('state')!, cookie, setCookies };
}

export function callback(provider: string, query: Record<string, string>, cookie?: string) {
  return server.fetch(`/api/auth/callback/${provider}?${new URLSearchParams(query)}`, {
    // JSON accepted: Express then sends the redirect without a text body.
    headers: { accept: 'application/json', ...(cookie ? { cookie } : {}) },
    redirect: 'manual',
  });
}

export function github(overrides: Partial<GitHubProfile> & { email?: string; verified?: boolean } = {}): GitHubProfile {
  const id = ++nextId;
  const email = overrides.email ?? `gh${id}@example.com`;
  return {
    id,
    login: `octo${id}`,
    name: `Octo ${id}`,
    avatar_url: `https://avatars.example.com/u/${id}`,
    emails: [
      { email: `other${id}@example.com`, primary: false, verified: true },
      { email, primary: true, verified: overrides.verified ?? true },
    ],
    ...overrides,
  };
}

export function google(overrides: Partial<GoogleProfile> = {}): GoogleProfile {
  const id = ++nextId;
  return { sub: `g-${id}`, email: `g${id}@example.com`, email_verified: true, name: `Gee ${id}`, picture: `https://lh3.example.com/${id}`, ...overrides };
}

export async function signIn(provider: 'github' | 'google', profile: GitHubProfile | GoogleProfile, extra: Record<string, string> = {}) {
  const flow = await start(provider, extra);
  const code =
    provider === 'github'
      ? providers.issueCode({ provider, profile: profile as GitHubProfile })
      : providers.issueCode({ provider, profile: profile as GoogleProfile, challenge: flow.url.searchParams.get('code_challenge')!, nonce: flow.url.searchParams.get('nonce')! });
  const response = await callback(provider, { code, state: flow.state }, flow.cookie);
  return { flow, response, location: response.headers.get('location'), token: response.headers.get('set-auth-token') };
}

export async function userByEmail(email: string) {
  const [user] = await server.db.sql`select * from users where lower(email) = lower(${email})`;
  return user;
}

export async function accountsOf(userId: string) {
  return (await server.db.sql`select provider, provider_account_id from accounts where user_id = ${userId} order by provider`).map((row) => ({ ...row }));
}

export async function me(token: string) {
  const response = await server.fetch('/api/v1/me', { headers: { authorization: `Bearer ${token}` } });
  return response.json();
}
