/** auth.signInSocial, and what a deployment without a provider answers. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../support/server.ts';
import { start, testbed, useSocialTestbed } from './testbed.ts';

useSocialTestbed();

describe('auth.signInSocial', () => {
  it('answers GitHub’s authorization address and sets the state cookies', async () => {
    const flow = await start('github', { callbackURL: '/dashboard' });
    expect(flow.url.origin + flow.url.pathname).toBe(`${testbed.providers.origin}/github/login/oauth/authorize`);
    expect(Object.fromEntries(flow.url.searchParams)).toEqual({
      client_id: 'test-client-id',
      redirect_uri: 'http://127.0.0.1:3999/api/auth/callback/github',
      scope: 'read:user user:email',
      state: flow.state,
    });
    expect(flow.setCookies).toContain(`oauth_state=${flow.state}; Path=/api/auth; Max-Age=600; HttpOnly; SameSite=Lax`);
    expect(flow.setCookies.some((line) => line.startsWith('oauth_flow='))).toBe(true);
    expect(flow.setCookies.some((line) => line.startsWith('oauth_code_verifier='))).toBe(false);
  });

  it('answers Google’s address (from discovery) with PKCE S256 and a nonce', async () => {
    const flow = await start('google');
    expect(flow.url.origin + flow.url.pathname).toBe(`${testbed.providers.origin}/google/o/oauth2/v2/auth`);
    expect(flow.url.searchParams.get('response_type')).toBe('code');
    expect(flow.url.searchParams.get('scope')).toBe('openid email profile');
    expect(flow.url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(flow.url.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(flow.url.searchParams.get('nonce')).toBeTruthy();
    for (const name of ['oauth_state', 'oauth_flow', 'oauth_code_verifier', 'oauth_nonce']) {
      expect(
        flow.setCookies.find((line) => line.startsWith(`${name}=`)),
        name,
      ).toMatch(/; Path=\/api\/auth; Max-Age=600; HttpOnly; SameSite=Lax$/);
    }
  });

  it.each([
    ['callbackURL', 'https://evil.example.com/steal'],
    ['callbackURL', '//evil.example.com/steal'],
    ['errorCallbackURL', 'javascript:alert(1)'],
  ])('refuses %s %s with 400', async (field, value) => {
    const response = await testbed.server.fetch('/api/auth/sign-in/social', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ provider: 'github', [field]: value }),
    });
    expect(response.status).toBe(400);
    expect((await response.json()).data.issues[0].path).toEqual([field]);
  });

  it('answers 400 for a provider outside the contract', async () => {
    const response = await testbed.server.fetch('/api/auth/sign-in/social', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ provider: 'gitlab' }) });
    expect(response.status).toBe(400);
  });
});

describe('a provider that is not configured', () => {
  let bare: TestServer;
  beforeAll(async () => {
    bare = await startTestServer({ env: { AUTH_RATE_LIMIT_PER_MINUTE: '1000' }, db: testbed.server.db });
  });
  afterAll(() => bare.close());

  it('sign-in/social answers 412 PRECONDITION_FAILED', async () => {
    for (const provider of ['github', 'google']) {
      const response = await bare.fetch('/api/auth/sign-in/social', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ provider }) });
      expect(response.status).toBe(412);
      expect(await response.json()).toMatchObject({ code: 'PRECONDITION_FAILED', message: `Sign-in with ${provider} is not enabled on this deployment.` });
    }
  });

  it('the callback answers 400', async () => {
    const response = await bare.fetch('/api/auth/callback/google?code=c&state=s', { headers: { accept: 'application/json' }, redirect: 'manual' });
    expect(response.status).toBe(400);
    expect((await response.json()).data.issues[0].path).toEqual(['provider']);
  });

  it('system.authConfig lists only the configured providers', async () => {
    expect(await (await bare.fetch('/api/v1/auth-config')).json()).toEqual({ socialProviders: [], requireEmailVerification: false });
    expect(await (await testbed.server.fetch('/api/v1/auth-config')).json()).toEqual({ socialProviders: ['github', 'google'], requireEmailVerification: false });
  });
});
