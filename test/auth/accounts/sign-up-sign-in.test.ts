import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../support/server.ts';
import { linkIn, startSmtpReceiver, type SmtpReceiver } from '../../support/smtp.ts';
import { bearer, post, PASSWORD, sessionCookie, signIn, signUp, uniqueEmail } from './clients.ts';

const TOKEN = /^[a-z2-7]{24}\.[a-z2-7]{52}$/;
let smtp: SmtpReceiver;
let server: TestServer;

beforeAll(async () => {
  smtp = await startSmtpReceiver({ refuse: (address) => address.startsWith('bounce-') });
  server = await startTestServer({
    env: {
      AUTH_RATE_LIMIT_PER_MINUTE: '1000',
      EMAIL_PROVIDER: 'smtp',
      SMTP_URL: smtp.url,
      WEB_URL: 'https://app.example.com',
      TRUSTED_ORIGINS: 'https://partner.example.com',
      ADMIN_EMAILS: 'boss@example.com',
    },
  });
});
afterAll(async () => {
  await server?.close();
  await smtp?.stop();
});

describe('auth.signUpEmail', () => {
  it('creates the user and signs it in: token in the body, set-auth-token and the session cookie', async () => {
    const { response, body, email } = await signUp(server, { name: 'Ada Lovelace' });
    expect(response.status).toBe(200);
    expect(body.token).toMatch(TOKEN);
    expect(body.user).toMatchObject({ email, name: 'Ada Lovelace', emailVerified: false, role: 'user', banned: false, image: null });
    expect(response.headers.get('set-auth-token')).toBe(body.token);
    const cookie = sessionCookie(response)!;
    // 7 days (the inactivity limit), give or take the second that passed since the session was created.
    expect(cookie).toMatch(new RegExp(`^session=${body.token}; Path=/; Max-Age=(604800|604799); HttpOnly; SameSite=Lax$`));

    const session = await server.fetch('/api/auth/get-session', { headers: bearer(body.token) });
    expect((await session.json()).user.id).toBe(body.user.id);
    const [account] = await server.db.sql`select password_hash from accounts where user_id = ${body.user.id} and provider = 'credential'`;
    expect(account!.password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
  });

  it('still mails a verification link when verification is not required', async () => {
    const { email } = await signUp(server, { callbackURL: '/welcome' });
    const mail = await smtp.nextMessageTo(email);
    expect(mail.subject).toBe('Verify your email address');
    const link = linkIn(mail);
    expect(`${link.origin}${link.pathname}`).toBe(`${server.services.config.publicUrl}/api/auth/verify-email`);
    expect(link.searchParams.get('token')).toMatch(TOKEN);
    expect(link.searchParams.get('callbackURL')).toBe('/welcome');
  });

  it('signs the user up even when the verification email cannot be sent, and logs why', async () => {
    const { response, body } = await signUp(server, { email: uniqueEmail('bounce') });
    expect(response.status).toBe(200);
    expect(body.token).toMatch(TOKEN);
    expect(server.logs.some((line) => line.msg === 'verification email could not be sent' && line.userId === body.user.id)).toBe(true);
  });

  it('makes a user whose email is in ADMIN_EMAILS a platform admin, whatever the case', async () => {
    const { body } = await signUp(server, { email: 'Boss@Example.com' });
    expect(body.user).toMatchObject({ email: 'Boss@Example.com', role: 'admin' });
  });

  it('keeps the email as given but refuses the same address in another case: 422 USER_ALREADY_EXISTS', async () => {
    const email = `Grace.${uniqueEmail('hopper')}`;
    const first = await signUp(server, { email });
    expect(first.body.user.email).toBe(email);
    const again = await signUp(server, { email: email.toUpperCase() });
    expect(again.response.status).toBe(422);
    expect(again.body).toEqual({ defined: true, code: 'USER_ALREADY_EXISTS', status: 422, message: expect.any(String) });
    expect(again.response.headers.get('set-auth-token')).toBeNull();
  });

  it('two sign-ups racing for one address: exactly one wins', async () => {
    const email = uniqueEmail('race');
    const results = await Promise.all([signUp(server, { email }), signUp(server, { email: email.toUpperCase() })]);
    expect(results.map((r) => r.response.status).sort()).toEqual([200, 422]);
  });

  const badCallbacks = ['https://evil.example.com/x', '//evil.example.com/x', '/\\evil.example.com', 'javascript:alert(1)', 'dashboard'];
  for (const callbackURL of badCallbacks) {
    it(`refuses callbackURL ${JSON.stringify(callbackURL)}: 400 with an issue on callbackURL`, async () => {
      const { response, body } = await signUp(server, { callbackURL });
      expect(response.status).toBe(400);
      expect(body.code).toBe('BAD_REQUEST');
      expect(body.data.issues).toEqual([expect.objectContaining({ path: ['callbackURL'] })]);
    });
  }

  it('accepts callbackURL on a trusted origin, the web URL and the public URL', async () => {
    for (const callbackURL of ['https://partner.example.com/a', 'https://app.example.com/b?x=1', `${server.services.config.publicUrl}/c`]) {
      expect((await signUp(server, { callbackURL })).response.status, callbackURL).toBe(200);
    }
  });

  const badInputs = [
    { given: { password: 'short' }, path: ['password'] },
    { given: { email: 'not-an-email' }, path: ['email'] },
    { given: { name: 'two\nlines' }, path: ['name'] },
  ];
  for (const { given, path } of badInputs) {
    it(`answers 400 for ${JSON.stringify(given)}`, async () => {
      const { response, body } = await signUp(server, given);
      expect(response.status).toBe(400);
      expect(body.data.issues.map((issue: { path: unknown }) => issue.path)).toContainEqual(path);
    });
  }
});

describe('auth.signInEmail', () => {
  it('signs in with any case of the email, records the address and User-Agent of the client', async () => {
    const { email } = await signUp(server);
    const { response, body, token } = await signIn(server, email.toUpperCase(), PASSWORD, { 'user-agent': 'account-tests/1.0' });
    expect(response.status).toBe(200);
    expect(token).toMatch(TOKEN);
    expect(body.user.email).toBe(email);
    expect(response.headers.get('set-auth-token')).toBe(token);
    expect(sessionCookie(response)).toContain(`session=${token};`);
    const sessions = await (await server.fetch('/api/auth/list-sessions', { headers: bearer(token) })).json();
    expect(sessions.find((s: { current: boolean }) => s.current)).toMatchObject({ ipAddress: '127.0.0.1', userAgent: 'account-tests/1.0' });
  });

  // Equal timing is built in (an unknown email still costs one argon2 check, see passwords.ts
  // burnPasswordCheck); tests assert no timings, only that the answers cannot be told apart.
  it('answers an unknown email and a wrong password alike: 401 INVALID_EMAIL_OR_PASSWORD', async () => {
    const users = await Promise.all([1, 2, 3, 4].map(() => signUp(server)));
    await signIn(server, uniqueEmail('warm-up'), 'whatever'); // the first unknown-email check also builds its dummy hash
    const attempt = async (email: string, password: string) => {
      const { response, body } = await signIn(server, email, password);
      return { status: response.status, body, setsToken: response.headers.has('set-auth-token') };
    };
    const unknown = [];
    const wrong = [];
    for (const user of users) {
      unknown.push(await attempt(uniqueEmail('nobody'), 'wrong password'));
      wrong.push(await attempt(user.email, 'wrong password'));
    }
    for (const answer of [...unknown, ...wrong]) {
      expect(answer.status).toBe(401);
      expect(answer.body).toEqual({ defined: true, code: 'INVALID_EMAIL_OR_PASSWORD', status: 401, message: unknown[0]!.body.message });
      expect(answer.setsToken).toBe(false);
    }
  });

  it('answers 403 BANNED_USER to a banned user with the right password, and lets them in once the ban ended', async () => {
    const { email, body } = await signUp(server);
    await server.db.sql`update users set banned = true, ban_reason = 'spam' where id = ${body.user.id}`;
    const banned = await signIn(server, email);
    expect(banned.response.status).toBe(403);
    expect(banned.body).toMatchObject({ defined: true, code: 'BANNED_USER', status: 403 });
    // A wrong password still answers 401: the ban is not revealed to someone without the password.
    expect((await signIn(server, email, 'wrong password')).response.status).toBe(401);

    await server.db.sql`update users set ban_expires_at = ${new Date(Date.now() - 1000)} where id = ${body.user.id}`;
    const after = await signIn(server, email);
    expect(after.response.status).toBe(200);
    expect(after.body.user).toMatchObject({ banned: false, banReason: null, banExpiresAt: null });
  });

  it('limits attempts per email address: the sixth within 15 minutes answers 429 with Retry-After, right password or not', async () => {
    const { email } = await signUp(server);
    for (let i = 0; i < 4; i += 1) expect((await signIn(server, email, 'wrong password')).response.status).toBe(401);
    expect((await signIn(server, email.toUpperCase())).response.status).toBe(200);
    const limited = await signIn(server, email);
    expect(limited.response.status).toBe(429);
    expect(limited.body).toMatchObject({ code: 'TOO_MANY_REQUESTS', status: 429 });
    const retryAfter = Number(limited.response.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(800);
    expect(retryAfter).toBeLessThanOrEqual(900);
    // Another address is not affected.
    const other = await signUp(server);
    expect((await signIn(server, other.email)).response.status).toBe(200);
  });

  it('answers 400 to a body that breaks the contract', async () => {
    const response = await server.fetch('/api/auth/sign-in/email', post({ email: 'a@example.com' }));
    expect(response.status).toBe(400);
    expect((await response.json()).data.issues).toContainEqual(expect.objectContaining({ path: ['password'] }));
  });
});

describe('cookie clients (CSRF rule)', () => {
  it('a request carrying a Cookie header needs a trusted Origin; cookie-less and bearer requests do not', async () => {
    const { email } = await signUp(server);
    const cookie = { cookie: 'session=anything' };
    const cases = [
      { headers: {}, want: 200 },
      { headers: cookie, want: 403 },
      { headers: { ...cookie, origin: 'https://evil.example.com' }, want: 403 },
      { headers: { ...cookie, origin: 'https://app.example.com' }, want: 200 },
      { headers: { ...cookie, origin: 'https://partner.example.com' }, want: 200 },
      { headers: { ...cookie, authorization: 'Bearer whatever' }, want: 200 },
    ];
    for (const { headers, want } of cases) {
      const { response, body } = await signIn(server, email, PASSWORD, headers);
      expect(response.status, JSON.stringify(headers)).toBe(want);
      if (want === 403) expect(body).toMatchObject({ code: 'FORBIDDEN', status: 403 });
    }
  });
});
