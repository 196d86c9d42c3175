/** auth.callback with Google (fake-providers.ts plays it): PKCE, nonce and a verified RS256 ID token. */
import { describe, expect, it } from 'vitest';
import { createUser } from '../../support/users.ts';
import { start, callback, google, signIn, userByEmail, accountsOf, me, testbed, useSocialTestbed } from './testbed.ts';

useSocialTestbed();

describe('auth.callback with Google', () => {
  it('creates a new user from the verified ID token and userinfo, sending the PKCE verifier', async () => {
    const profile = google();
    const { response, location, token } = await signIn('google', profile, { callbackURL: '/after' });
    expect(response.status).toBe(302);
    expect(location).toBe('/after');
    const user = await userByEmail(profile.email);
    expect(user).toMatchObject({ name: profile.name, image: profile.picture, email_verified: true });
    expect(await accountsOf(user!.id)).toEqual([{ provider: 'google', provider_account_id: profile.sub }]);
    expect(await me(token!)).toMatchObject({ id: user!.id });
    expect(testbed.providers.tokenRequests.at(-1)!.code_verifier).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('links an existing user through a verified email', async () => {
    const existing = await createUser(testbed.server.db, { email: 'grace@example.com' });
    const { token } = await signIn('google', google({ email: 'GRACE@example.com' }));
    expect(await me(token!)).toMatchObject({ id: existing.id });
  });

  it('refuses an email Google reports unverified: error=EMAIL_NOT_VERIFIED, no link', async () => {
    const existing = await createUser(testbed.server.db, { email: 'unverified-google@example.com' });
    const { location, token } = await signIn('google', google({ email: 'unverified-google@example.com', email_verified: false }), { callbackURL: '/x' });
    expect(location).toBe('/x?error=EMAIL_NOT_VERIFIED');
    expect(token).toBeNull();
    expect(await accountsOf(existing.id)).toEqual([{ provider: 'credential', provider_account_id: existing.id }]);
  });

  it.each([
    ['a wrong nonce', { nonce: 'not-the-nonce' }],
    ['another audience', { aud: 'someone-else' }],
    ['another issuer', { iss: 'https://accounts.example.com' }],
    ['an expired token', { exp: Math.floor(Date.now() / 1000) - 600 }],
  ])('refuses an ID token with %s (error=SIGN_IN_FAILED)', async (_name, idTokenOverrides) => {
    const flow = await start('google', { callbackURL: '/x' });
    const profile = google();
    const code = testbed.providers.issueCode({ provider: 'google', profile, challenge: flow.url.searchParams.get('code_challenge')!, nonce: flow.url.searchParams.get('nonce')!, idTokenOverrides });
    const response = await callback('google', { code, state: flow.state }, flow.cookie);
    expect(response.headers.get('location')).toBe('/x?error=SIGN_IN_FAILED');
    expect(await userByEmail(profile.email)).toBeUndefined();
  });

  it('refuses an ID token signed with a key outside the issuer’s JWKS', async () => {
    const flow = await start('google', { callbackURL: '/x' });
    const code = testbed.providers.issueCode({
      provider: 'google',
      profile: google(),
      challenge: flow.url.searchParams.get('code_challenge')!,
      nonce: flow.url.searchParams.get('nonce')!,
      signWithUnknownKey: true,
    });
    const response = await callback('google', { code, state: flow.state }, flow.cookie);
    expect(response.headers.get('location')).toBe('/x?error=SIGN_IN_FAILED');
    expect(testbed.server.logs.filter((line) => line.msg === 'social sign-in failed at the provider').at(-1)!.err.message).toMatch(/signature/i);
  });

  it('refuses a code redeemed without the matching PKCE verifier', async () => {
    const flow = await start('google', { callbackURL: '/x' });
    const other = await start('google');
    const code = testbed.providers.issueCode({ provider: 'google', profile: google(), challenge: other.url.searchParams.get('code_challenge')!, nonce: flow.url.searchParams.get('nonce')! });
    const response = await callback('google', { code, state: flow.state }, flow.cookie);
    expect(response.headers.get('location')).toBe('/x?error=SIGN_IN_FAILED');
  });
});
