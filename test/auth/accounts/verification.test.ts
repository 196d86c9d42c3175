import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../support/server.ts';
import { linkIn, type SmtpReceiver } from '../../support/smtp.ts';
import { createUser } from '../../support/users.ts';
import { post, PASSWORD, sessionCookie, signIn, signUp, startMailingServer, testClock, uniqueEmail } from './clients.ts';

const WEB = 'https://app.example.com';
const clock = testClock('2030-05-01T12:00:00.000Z');
const advance = clock.advance;
let smtp: SmtpReceiver;
/** Requires verification and mails through the SMTP receiver. */
let server: TestServer;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ server, smtp, close } = await startMailingServer({ WEB_URL: WEB, REQUIRE_EMAIL_VERIFICATION: 'true' }, clock.now));
});
afterAll(async () => {
  await close?.();
});

const verify = (link: URL) => server.fetch(`${link.pathname}${link.search}`);
// Plain fetch for the 302 answers: server.fetch parses every body as JSON, and Express gives a
// redirect a text body (see the report); the contract check skips redirects anyway.
const follow = (link: URL) => fetch(`${server.origin}${link.pathname}${link.search}`, { redirect: 'manual' });
const emailVerified = async (email: string) => (await server.db.sql`select email_verified from users where lower(email) = lower(${email})`)[0]!.email_verified;

describe('a deployment that requires email verification', () => {
  it('sign-up answers token null, sets no session, and mails a link; sign-in waits for the verification', async () => {
    const { response, body, email } = await signUp(server, { callbackURL: '/welcome' });
    expect(response.status).toBe(200);
    expect(body.token).toBeNull();
    expect(body.user.emailVerified).toBe(false);
    expect(response.headers.get('set-auth-token')).toBeNull();
    expect(sessionCookie(response)).toBeUndefined();
    expect(await server.db.sql`select id from sessions where user_id = ${body.user.id}`).toHaveLength(0);

    const refused = await signIn(server, email);
    expect(refused.response.status).toBe(403);
    expect(refused.body).toMatchObject({ defined: true, code: 'EMAIL_NOT_VERIFIED', status: 403 });
    // The wrong password still answers 401: whether the address is verified is not revealed.
    expect((await signIn(server, email, 'wrong password')).response.status).toBe(401);

    const link = linkIn(await smtp.nextMessageTo(email));
    const response2 = await follow(link);
    expect(response2.status).toBe(302);
    expect(response2.headers.get('location')).toBe(`${server.services.config.publicUrl}/welcome`);
    expect(response2.headers.get('set-auth-token')).toBeNull(); // verifying does not sign in
    const signedIn = await signIn(server, email);
    expect(signedIn.response.status).toBe(200);
    expect(signedIn.body.user.emailVerified).toBe(true);
  });
});

describe('auth.sendVerificationEmail', () => {
  it('mails an unverified account a new link, valid for 1 hour, leading to callbackURL', async () => {
    const { email } = await signUp(server);
    await smtp.nextMessageTo(email); // the sign-up's own
    const response = await server.fetch('/api/auth/send-verification-email', post({ email: email.toUpperCase(), callbackURL: `${WEB}/done` }));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: true });
    const link = linkIn(await smtp.nextMessageTo(email));
    expect(`${link.origin}${link.pathname}`).toBe(`${server.services.config.publicUrl}/api/auth/verify-email`);
    expect(link.searchParams.get('callbackURL')).toBe(`${WEB}/done`);
    const [row] = await server.db.sql`select expires_at from verification_tokens where id = ${`vt_${link.searchParams.get('token')!.split('.')[0]}`}`;
    expect(row!.expires_at).toEqual(new Date(clock.now().getTime() + 3600_000));
  });

  it('answers status true for a verified account and an unknown address alike, mailing neither', async () => {
    const verified = await createUser(server.db, { emailVerified: true, now: clock.now() });
    const unknown = uniqueEmail('nobody');
    for (const email of [verified.email, unknown]) {
      const response = await server.fetch('/api/auth/send-verification-email', post({ email }));
      expect(await response.json()).toEqual({ status: true });
    }
    // A message sent after them has arrived; nothing for those two.
    const later = await createUser(server.db, { emailVerified: false, now: clock.now() });
    await server.fetch('/api/auth/send-verification-email', post({ email: later.email }));
    await smtp.nextMessageTo(later.email);
    expect(smtp.messagesTo(verified.email)).toHaveLength(0);
    expect(smtp.messagesTo(unknown)).toHaveLength(0);
  });

  it('refuses a callbackURL on an untrusted origin: 400 with an issue on callbackURL', async () => {
    const response = await server.fetch('/api/auth/send-verification-email', post({ email: uniqueEmail(), callbackURL: 'https://evil.example.com/' }));
    expect(response.status).toBe(400);
    expect((await response.json()).data.issues).toEqual([expect.objectContaining({ path: ['callbackURL'] })]);
  });
});

/** A fresh unverified user and the link of a verification email sent to them (optionally with a callbackURL). */
async function verificationLink(callbackURL?: string): Promise<{ email: string; link: URL }> {
  const user = await createUser(server.db, { emailVerified: false, now: clock.now() });
  await server.fetch('/api/auth/send-verification-email', post({ email: user.email, ...(callbackURL ? { callbackURL } : {}) }));
  return { email: user.email, link: linkIn(await smtp.nextMessageTo(user.email)) };
}

describe('auth.verifyEmail', () => {
  it('without callbackURL answers status true, and the token works once', async () => {
    const { email, link } = await verificationLink();
    expect(await emailVerified(email)).toBe(false);
    const first = await verify(link);
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ status: true });
    expect(await emailVerified(email)).toBe(true);
    const again = await verify(link);
    expect(again.status).toBe(400);
    expect(await again.json()).toMatchObject({ defined: true, code: 'INVALID_TOKEN', status: 400 });
  });

  it('with callbackURL redirects there, adding error=INVALID_TOKEN when the token failed', async () => {
    const { link } = await verificationLink(`${WEB}/verified?tab=1`);
    const ok = await follow(link);
    expect(ok.status).toBe(302);
    expect(ok.headers.get('location')).toBe(`${WEB}/verified?tab=1`);
    const failed = await follow(link);
    expect(failed.status).toBe(302);
    expect(failed.headers.get('location')).toBe(`${WEB}/verified?tab=1&error=INVALID_TOKEN`);
  });

  it('a token past its hour, a forged or a malformed one is refused', async () => {
    const { email, link } = await verificationLink();
    advance(3600_000);
    const token = link.searchParams.get('token')!;
    for (const candidate of [token, `${token.split('.')[0]}.${'a'.repeat(52)}`, 'garbage']) {
      const response = await server.fetch(`/api/auth/verify-email?token=${encodeURIComponent(candidate)}`);
      expect(response.status, candidate).toBe(400);
      expect((await response.json()).code).toBe('INVALID_TOKEN');
    }
    expect(await emailVerified(email)).toBe(false);
  });

  it('refuses an untrusted callbackURL with 400 BAD_REQUEST before touching the token', async () => {
    const { email, link } = await verificationLink();
    const response = await server.fetch(`${link.pathname}${link.search}&callbackURL=${encodeURIComponent('https://evil.example.com/')}`, { redirect: 'manual' });
    expect(response.status).toBe(400);
    expect((await response.json()).data.issues).toEqual([expect.objectContaining({ path: ['callbackURL'] })]);
    expect(await emailVerified(email)).toBe(false);
    expect((await verify(link)).status).toBe(200);
  });

  it('answers 400 BAD_REQUEST without a token', async () => {
    const response = await server.fetch('/api/auth/verify-email');
    expect(response.status).toBe(400);
    expect((await response.json()).code).toBe('BAD_REQUEST');
  });
});

describe('other email providers', () => {
  it('with none: sign-up under required verification and send-verification-email answer 412', async () => {
    const bare = await startTestServer({ db: server.db, env: { AUTH_RATE_LIMIT_PER_MINUTE: '1000', EMAIL_PROVIDER: 'none', REQUIRE_EMAIL_VERIFICATION: 'true' } });
    try {
      const send = await bare.fetch('/api/auth/send-verification-email', post({ email: uniqueEmail() }));
      expect(send.status).toBe(412);
      expect(await send.json()).toMatchObject({ code: 'PRECONDITION_FAILED', defined: true });
      // Plain fetch: the contract does not declare 412 for sign-up (see the report).
      const email = uniqueEmail();
      const signUpResponse = await fetch(`${bare.origin}/api/auth/sign-up/email`, post({ name: 'Ada', email, password: PASSWORD }));
      expect(signUpResponse.status).toBe(412);
      expect(await signUpResponse.json()).toMatchObject({ code: 'PRECONDITION_FAILED' });
      expect(await server.db.sql`select id from users where email = ${email}`).toHaveLength(0);
    } finally {
      await bare.close();
    }
  });

  it('with log: the message, with a working link, is written to the log', async () => {
    const logged = await startTestServer({ db: server.db, env: { AUTH_RATE_LIMIT_PER_MINUTE: '1000', EMAIL_PROVIDER: 'log' }, overrides: { now: clock.now } });
    try {
      const { email, body } = await signUp(logged);
      expect(body.token).not.toBeNull();
      const line = logged.logs.find((entry) => entry.email?.to === email);
      expect(line).toMatchObject({ msg: 'email (log provider, not sent)', email: { subject: 'Verify your email address' } });
      const link = linkIn(line!.email);
      const response = await logged.fetch(`${link.pathname}${link.search}`);
      expect(await response.json()).toEqual({ status: true });

      // The background sends of the public routes reach the log too.
      await logged.fetch('/api/auth/request-password-reset', post({ email }));
      await expect.poll(() => logged.logs.find((entry) => entry.email?.to === email && entry.email.subject === 'Reset your password')).toBeTruthy();
    } finally {
      await logged.close();
    }
  });
});
