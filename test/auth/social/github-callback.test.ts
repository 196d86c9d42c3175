/** auth.callback with GitHub (fake-providers.ts plays it): new users, linking, refusals, state checks. */
import { describe, expect, it } from 'vitest';
import { createUser } from '../../support/users.ts';
import { start, callback, github, signIn, userByEmail, accountsOf, me, testbed, type Started, useSocialTestbed } from './testbed.ts';

useSocialTestbed();

describe('auth.callback with GitHub', () => {
  it('creates a new user with the primary verified email, signs them in and redirects', async () => {
    const profile = github();
    const { response, location, token, flow } = await signIn('github', profile, { callbackURL: 'https://app.example.com/welcome' });
    expect(response.status).toBe(302);
    expect(location).toBe('https://app.example.com/welcome');
    expect(token).toMatch(/^[a-z2-7]{24}\.[a-z2-7]{52}$/);
    const setCookies = response.headers.getSetCookie();
    // 7 days (the inactivity limit), give or take the second the request took.
    expect(setCookies.find((line) => line.startsWith('session='))).toMatch(new RegExp(`^session=${token!.replace('.', '\\.')}; Path=/; Max-Age=(?:604799|604800); HttpOnly; SameSite=Lax$`));
    for (const name of ['oauth_state', 'oauth_flow', 'oauth_code_verifier', 'oauth_nonce']) {
      expect(setCookies).toContain(`${name}=; Path=/api/auth; Max-Age=0; HttpOnly; SameSite=Lax`);
    }
    const user = await userByEmail(profile.emails[1]!.email);
    expect(user).toMatchObject({ name: profile.name, image: profile.avatar_url, email_verified: true, role: null });
    expect(await accountsOf(user!.id)).toEqual([{ provider: 'github', provider_account_id: String(profile.id) }]);
    expect(await me(token!)).toMatchObject({ id: user!.id });
    // The token request carried the client credentials and the exact redirect_uri.
    expect(testbed.providers.tokenRequests.at(-1)).toMatchObject({ grant_type: 'authorization_code', redirect_uri: 'http://127.0.0.1:3999/api/auth/callback/github' });
    expect(flow.state).toHaveLength(43);
  });

  it('signs the same GitHub account in again, to the same user, defaulting to the web app', async () => {
    const profile = github();
    await signIn('github', profile);
    const again = await signIn('github', { ...profile, name: 'Renamed' });
    expect(again.location).toBe('https://app.example.com');
    const user = await userByEmail(profile.emails[1]!.email);
    expect(await me(again.token!)).toMatchObject({ id: user!.id, name: profile.name });
  });

  it('uses the login when GitHub has no name, and makes ADMIN_EMAILS users admins', async () => {
    const profile = github({ name: null, email: 'boss@example.com' });
    await signIn('github', profile);
    expect(await userByEmail('boss@example.com')).toMatchObject({ name: profile.login, role: 'admin' });
  });

  it('links an existing user through a verified email of any case', async () => {
    const existing = await createUser(testbed.server.db, { email: 'Linus@Example.com', emailVerified: true });
    const profile = github({ email: 'linus@example.COM' });
    const { location, token } = await signIn('github', profile, { callbackURL: '/home' });
    expect(location).toBe('/home');
    expect(await me(token!)).toMatchObject({ id: existing.id, email: 'Linus@Example.com' });
    expect(await accountsOf(existing.id)).toEqual([
      { provider: 'credential', provider_account_id: existing.id },
      { provider: 'github', provider_account_id: String(profile.id) },
    ]);
  });

  it('linking a user whose email was never verified verifies it and drops the password set by whoever registered it', async () => {
    const squatter = await createUser(testbed.server.db, { email: 'victim@example.com', emailVerified: false });
    const profile = github({ email: 'victim@example.com' });
    const { token } = await signIn('github', profile);
    expect(await me(token!)).toMatchObject({ id: squatter.id });
    expect(await userByEmail('victim@example.com')).toMatchObject({ email_verified: true });
    expect(await accountsOf(squatter.id)).toEqual([{ provider: 'github', provider_account_id: String(profile.id) }]);
    expect((await testbed.server.fetch('/api/v1/me', { headers: squatter.headers })).status).toBe(401);
  });

  it('refuses to link (or create) through an email GitHub has not verified: error=EMAIL_NOT_VERIFIED, nothing written', async () => {
    const existing = await createUser(testbed.server.db, { email: 'unverified-link@example.com' });
    const profile = github({ email: 'unverified-link@example.com', verified: false });
    const { response, location, token } = await signIn('github', profile, { callbackURL: '/home', errorCallbackURL: '/sign-in?from=github' });
    expect(response.status).toBe(302);
    expect(location).toBe('/sign-in?from=github&error=EMAIL_NOT_VERIFIED');
    expect(token).toBeNull();
    expect(response.headers.getSetCookie().some((line) => line.startsWith('session='))).toBe(false);
    expect(await accountsOf(existing.id)).toEqual([{ provider: 'credential', provider_account_id: existing.id }]);

    const stranger = github({ email: 'nobody-yet@example.com', verified: false });
    expect((await signIn('github', stranger)).location).toBe('https://app.example.com/?error=EMAIL_NOT_VERIFIED');
    expect(await userByEmail('nobody-yet@example.com')).toBeUndefined();
  });

  it('redirects a banned user with error=BANNED_USER and no session', async () => {
    const banned = await createUser(testbed.server.db, { email: 'banned-social@example.com' });
    await testbed.server.db.sql`update users set banned = true where id = ${banned.id}`;
    const { location, token } = await signIn('github', github({ email: 'banned-social@example.com' }), { callbackURL: '/app' });
    expect(location).toBe('/app?error=BANNED_USER');
    expect(token).toBeNull();
  });

  it('passes the provider’s error on to errorCallbackURL and clears the flow cookies', async () => {
    const flow = await start('github', { callbackURL: '/app', errorCallbackURL: 'https://app.example.com/sign-in' });
    const response = await callback('github', { state: flow.state, error: 'access_denied', error_description: 'The user has denied your application access.' }, flow.cookie);
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('https://app.example.com/sign-in?error=access_denied');
    expect(response.headers.getSetCookie()).toContain('oauth_state=; Path=/api/auth; Max-Age=0; HttpOnly; SameSite=Lax');
  });

  it('a code GitHub refuses redirects with error=SIGN_IN_FAILED', async () => {
    const flow = await start('github', { callbackURL: '/app' });
    const response = await callback('github', { state: flow.state, code: 'not-a-real-code' }, flow.cookie);
    expect(response.headers.get('location')).toBe('/app?error=SIGN_IN_FAILED');
    expect(testbed.server.logs.some((line) => line.msg === 'social sign-in failed at the provider')).toBe(true);
  });

  it.each([
    ['no state cookie', (flow: Started) => ({ query: { code: 'c', state: flow.state }, cookie: undefined })],
    ['no state parameter', (flow: Started) => ({ query: { code: 'c' }, cookie: flow.cookie })],
    ['a forged state', (flow: Started) => ({ query: { code: 'c', state: `${flow.state.slice(0, -1)}x` }, cookie: flow.cookie })],
    ['a flow started for Google', (flow: Started) => ({ query: { code: 'c', state: flow.state }, cookie: flow.cookie.replace('%22github%22', '%22google%22') })],
  ])('answers 400 for %s', async (_name, make) => {
    const flow = await start('github');
    const { query, cookie } = make(flow);
    const response = await callback('github', query, cookie);
    expect(response.status).toBe(400);
    const body = await response.json();
    expect(body).toMatchObject({ code: 'BAD_REQUEST', data: { issues: [{ path: ['state'] }] } });
  });

  it('answers 400 for a provider outside the contract', async () => {
    expect((await callback('gitlab', { code: 'c', state: 's' })).status).toBe(400);
  });

  it('a planted flow cookie cannot redirect off the trusted origins', async () => {
    const flow = await start('github', { callbackURL: '/app' });
    const planted = flow.cookie.replace(
      /oauth_flow=[^;]+/,
      `oauth_flow=${encodeURIComponent(JSON.stringify({ provider: 'github', callbackURL: 'https://evil.example.com', errorCallbackURL: 'https://evil.example.com' }))}`,
    );
    const response = await callback('github', { state: flow.state, error: 'access_denied' }, planted);
    expect(response.headers.get('location')).toBe('https://app.example.com/?error=access_denied');
  });
});
