import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../support/server.ts';
import { linkIn, type SmtpReceiver } from '../../support/smtp.ts';
import { newId } from '../../../src/ids.ts';
import { hashSecret } from '../../../src/auth/tokens.ts';
import { bearer, post, PASSWORD, sessionCookie, signIn, signUp, startMailingServer, testClock, uniqueEmail } from './clients.ts';

const TOKEN = /^[a-z2-7]{24}\.[a-z2-7]{52}$/;
const NEW_PASSWORD = 'tr0ub4dor and 3 more words';
const clock = testClock('2030-03-01T08:00:00.000Z');
const advance = clock.advance;
let smtp: SmtpReceiver;
let server: TestServer;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ server, smtp, close } = await startMailingServer({ WEB_URL: 'https://app.example.com' }, clock.now));
});
afterAll(async () => {
  await close?.();
});

const live = async (token: string) => (await server.fetch('/api/auth/list-sessions', { headers: bearer(token) })).status === 200;

describe('auth.changePassword', () => {
  it('keeps every session and answers token null by default; the new password replaces the old', async () => {
    const { email, body } = await signUp(server);
    const other = await signIn(server, email);
    const response = await server.fetch('/api/auth/change-password', post({ currentPassword: PASSWORD, newPassword: NEW_PASSWORD }, bearer(body.token)));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ token: null, user: body.user });
    expect(response.headers.get('set-auth-token')).toBeNull();
    expect(await live(body.token)).toBe(true);
    expect(await live(other.token)).toBe(true);
    expect((await signIn(server, email)).response.status).toBe(401);
    expect((await signIn(server, email, NEW_PASSWORD)).response.status).toBe(200);
  });

  it('with revokeOtherSessions, ends every session and signs this client in again with a new token', async () => {
    const { email, body, response: signedUp } = await signUp(server);
    const cookie = `session=${body.token}`;
    const other = await signIn(server, email);
    const response = await server.fetch(
      '/api/auth/change-password',
      post({ currentPassword: PASSWORD, newPassword: NEW_PASSWORD, revokeOtherSessions: true }, { cookie, origin: 'https://app.example.com' }),
    );
    expect(response.status).toBe(200);
    const answer = await response.json();
    expect(answer.token).toMatch(TOKEN);
    expect(answer.token).not.toBe(body.token);
    expect(response.headers.get('set-auth-token')).toBe(answer.token);
    expect(sessionCookie(response)).toContain(`session=${answer.token};`);
    expect(sessionCookie(signedUp)).toContain(body.token); // (the old cookie, for contrast)
    expect(await live(body.token)).toBe(false);
    expect(await live(other.token)).toBe(false);
    expect(await live(answer.token)).toBe(true);
  });

  it('answers 401 INVALID_EMAIL_OR_PASSWORD to a wrong current password and changes nothing', async () => {
    const { email, body } = await signUp(server);
    const response = await server.fetch('/api/auth/change-password', post({ currentPassword: 'wrong password', newPassword: NEW_PASSWORD, revokeOtherSessions: true }, bearer(body.token)));
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ defined: true, code: 'INVALID_EMAIL_OR_PASSWORD', status: 401 });
    expect(await live(body.token)).toBe(true);
    expect((await signIn(server, email)).response.status).toBe(200);
  });

  it('answers 401 INVALID_EMAIL_OR_PASSWORD to a user who only signs in through a provider', async () => {
    const { body } = await signUp(server);
    await server.db.sql`delete from accounts where user_id = ${body.user.id}`;
    await server.db.sql`insert into accounts (id, user_id, provider, provider_account_id) values (${newId('acc')}, ${body.user.id}, 'github', ${'gh-' + body.user.id})`;
    const response = await server.fetch('/api/auth/change-password', post({ currentPassword: PASSWORD, newPassword: NEW_PASSWORD }, bearer(body.token)));
    expect(response.status).toBe(401);
    expect((await response.json()).code).toBe('INVALID_EMAIL_OR_PASSWORD');
  });

  it('answers 400 to a new password that is too short', async () => {
    const { body } = await signUp(server);
    const response = await server.fetch('/api/auth/change-password', post({ currentPassword: PASSWORD, newPassword: 'short' }, bearer(body.token)));
    expect(response.status).toBe(400);
    expect((await response.json()).data.issues).toContainEqual(expect.objectContaining({ path: ['newPassword'] }));
  });

  it('a cookie client without a trusted Origin is refused (403)', async () => {
    const { body } = await signUp(server);
    const response = await server.fetch('/api/auth/change-password', post({ currentPassword: PASSWORD, newPassword: NEW_PASSWORD }, { cookie: `session=${body.token}` }));
    expect(response.status).toBe(403);
  });
});

/** Signs up, drains the sign-up verification email, and asks for a reset link. */
async function requestReset(redirectTo?: string) {
  const { email, body } = await signUp(server);
  await smtp.nextMessageTo(email);
  const response = await server.fetch('/api/auth/request-password-reset', post({ email: email.toUpperCase(), ...(redirectTo ? { redirectTo } : {}) }));
  expect(response.status).toBe(200);
  expect(await response.json()).toEqual({ status: true });
  const mail = await smtp.nextMessageTo(email);
  return { email, user: body.user, token: body.token as string, mail, link: linkIn(mail) };
}

const reset = (token: string | null, newPassword = NEW_PASSWORD) => server.fetch('/api/auth/reset-password', post({ token, newPassword }));

describe('auth.requestPasswordReset and auth.resetPassword', () => {
  it('mails a single-use link; using it sets the password and ends every session', async () => {
    const { email, token, mail, link } = await requestReset();
    const other = await signIn(server, email);
    expect(mail.subject).toBe('Reset your password');
    expect(`${link.origin}${link.pathname}`).toBe(`${server.services.config.publicUrl}/api/auth/reset-password`);
    const emailed = link.searchParams.get('token')!;
    expect(emailed).toMatch(TOKEN);
    const [row] = await server.db.sql`select id, token_hash, expires_at from verification_tokens where purpose = 'password-reset' and email = ${email}`;
    expect(row!.id).toBe(`vt_${emailed.split('.')[0]}`);
    expect(Buffer.from(row!.token_hash)).toEqual(Buffer.from(hashSecret(emailed.split('.')[1]!))); // only SHA-256(secret) is stored
    expect(row!.expires_at).toEqual(new Date(clock.now().getTime() + 3600_000));

    const response = await reset(emailed);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: true });
    expect(response.headers.get('set-auth-token')).toBeNull(); // does not sign in
    expect(await live(token)).toBe(false);
    expect(await live(other.token)).toBe(false);
    expect((await signIn(server, email)).response.status).toBe(401);
    expect((await signIn(server, email, NEW_PASSWORD)).response.status).toBe(200);

    const again = await reset(emailed, 'yet another password');
    expect(again.status).toBe(400);
    expect(await again.json()).toMatchObject({ defined: true, code: 'INVALID_TOKEN', status: 400 });
  });

  it('leads the link to redirectTo with the token in its query; a path is on this host', async () => {
    const cases = [
      { redirectTo: 'https://app.example.com/reset?lang=en', want: 'https://app.example.com/reset' },
      { redirectTo: '/account/reset', want: `${server.services.config.publicUrl}/account/reset` },
    ];
    for (const { redirectTo, want } of cases) {
      const { link } = await requestReset(redirectTo);
      expect(`${link.origin}${link.pathname}`).toBe(want);
      expect(link.searchParams.get('token')).toMatch(TOKEN);
      if (redirectTo.includes('lang=en')) expect(link.searchParams.get('lang')).toBe('en');
      expect((await reset(link.searchParams.get('token'))).status).toBe(200);
    }
  });

  it('answers status true for an unknown address and mails nothing', async () => {
    const nobody = uniqueEmail('nobody');
    const response = await server.fetch('/api/auth/request-password-reset', post({ email: nobody }));
    expect(await response.json()).toEqual({ status: true });
    await requestReset(); // a message that was sent after, and arrived
    expect(smtp.messagesTo(nobody)).toHaveLength(0);
  });

  it('refuses a redirectTo on an untrusted origin: 400 with an issue on redirectTo', async () => {
    const response = await server.fetch('/api/auth/request-password-reset', post({ email: uniqueEmail(), redirectTo: 'https://evil.example.com/steal' }));
    expect(response.status).toBe(400);
    expect((await response.json()).data.issues).toEqual([expect.objectContaining({ path: ['redirectTo'] })]);
  });

  it('an expired token (after 1 hour), an unknown or a malformed one answer 400 INVALID_TOKEN', async () => {
    const { link, email } = await requestReset();
    const emailed = link.searchParams.get('token')!;
    const forged = `${emailed.split('.')[0]}.${'a'.repeat(52)}`;
    advance(3600_000);
    for (const token of [emailed, forged, `${'b'.repeat(24)}.${'c'.repeat(52)}`, 'not-a-token']) {
      const response = await reset(token);
      expect(response.status, token).toBe(400);
      expect(await response.json()).toMatchObject({ code: 'INVALID_TOKEN', defined: true });
    }
    expect((await signIn(server, email)).response.status).toBe(200);
  });

  it('a password change spends reset links mailed before it', async () => {
    const { link, token } = await requestReset();
    await server.fetch('/api/auth/change-password', post({ currentPassword: PASSWORD, newPassword: NEW_PASSWORD }, bearer(token)));
    expect((await reset(link.searchParams.get('token'))).status).toBe(400);
  });

  it('answers 400 BAD_REQUEST to a new password that is too short, leaving the token usable', async () => {
    const { link } = await requestReset();
    const response = await reset(link.searchParams.get('token'), 'short');
    expect(response.status).toBe(400);
    expect((await response.json()).code).toBe('BAD_REQUEST');
    expect((await reset(link.searchParams.get('token'))).status).toBe(200);
  });

  it('two resets racing with one token: exactly one succeeds', async () => {
    const { link } = await requestReset();
    const token = link.searchParams.get('token');
    const statuses = (await Promise.all([reset(token), reset(token, 'another good password')])).map((r) => r.status).sort();
    expect(statuses).toEqual([200, 400]);
  });
});

describe('without an email provider', () => {
  it('request-password-reset answers 412 PRECONDITION_FAILED', async () => {
    const bare = await startTestServer({ env: { AUTH_RATE_LIMIT_PER_MINUTE: '1000', EMAIL_PROVIDER: 'none' }, db: server.db });
    try {
      const response = await bare.fetch('/api/auth/request-password-reset', post({ email: uniqueEmail() }));
      expect(response.status).toBe(412);
      expect(await response.json()).toMatchObject({ code: 'PRECONDITION_FAILED', defined: true });
    } finally {
      await bare.close();
    }
  });
});
