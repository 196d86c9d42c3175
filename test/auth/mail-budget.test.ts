/**
 * The per-recipient mail budget on the account mails (issue 40): verification and password-reset
 * links count against the same budget as invitations, whoever asks for them. Past it the public
 * mail routes answer exactly as before and send nothing (logged), and they count every request,
 * account or not, so the budget's state, which an invitation's 429 shows, does not tell which
 * addresses have accounts. The account's name reaches the greeting on one line and bounded.
 * Mail goes through nodemailer to a real SMTP receiver; these routes mail after answering, so the
 * tests wait for the mail, or for the log line of a refused one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SmtpReceiver } from '../support/smtp.ts';
import type { TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';
import { post, signUp, startMailingServer, testClock, uniqueEmail } from './accounts/clients.ts';

/** Mails one address may receive per hour here (MAIL_PER_RECIPIENT_LIMIT). */
const LIMIT = 3;
const HOUR = 3600_000;
// Starts at the real time: the users' sessions (test/support/users.ts) are made on it.
const clock = testClock(new Date().toISOString());
let smtp: SmtpReceiver;
let server: TestServer;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ server, smtp, close } = await startMailingServer({ MAIL_PER_RECIPIENT_LIMIT: String(LIMIT) }, clock.now));
});
afterAll(async () => {
  await close?.();
});

const resetPassword = (email: string) => server.fetch('/api/auth/request-password-reset', post({ email }));
const sendVerification = (email: string) => server.fetch('/api/auth/send-verification-email', post({ email }));

async function inviter(): Promise<{ owner: TestUser; orgId: string }> {
  const owner = await createUser(server.db);
  return { owner, orgId: await addMembership(server.db, owner, 'owner') };
}

async function invite(email: string) {
  const { owner, orgId } = await inviter();
  return server.fetch('/api/auth/organization/invite-member', post({ organizationId: orgId, email, role: 'member' }, owner.headers));
}

/** Resolves once the server has logged `count` lines with this message (the mail routes decide after answering). */
async function logged(message: string, count = 1): Promise<Record<string, any>[]> {
  for (let waited = 0; waited < 5_000; waited += 20) {
    const lines = server.logs.filter((line) => line.msg === message);
    if (lines.length >= count) return lines;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no ${count} log lines "${message}": ${JSON.stringify(server.logs.filter((line) => line.level >= 40).slice(-5))}`);
}

const RESET_REFUSED = "password reset email not sent: the recipient's mail budget is spent";
const VERIFICATION_REFUSED = "verification email not sent: the recipient's mail budget is spent";

describe('one budget for every kind of mail', () => {
  it('counts a verification link, a reset link and an invitation together; past it the account routes answer the same and send nothing', async () => {
    const { email, body } = await signUp(server);
    await smtp.nextMessageTo(email); // the verification link of sign-up
    expect((await resetPassword(email)).status).toBe(200);
    await smtp.nextMessageTo(email);
    expect((await invite(email)).status).toBe(200);
    expect(smtp.messagesTo(email)).toHaveLength(LIMIT);

    const reset = await resetPassword(email);
    expect(reset.status).toBe(200);
    expect(await reset.json()).toEqual({ status: true });
    const verification = await sendVerification(email);
    expect(verification.status).toBe(200);
    expect(await verification.json()).toEqual({ status: true });
    const refused = await invite(email);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('3600');

    const [line] = await logged(RESET_REFUSED);
    expect(line).toMatchObject({ userId: body.user.id, level: 40 });
    await logged(VERIFICATION_REFUSED);
    expect(smtp.messagesTo(email)).toHaveLength(LIMIT);

    // Once the window has ended, the address gets its mail again.
    clock.advance(HOUR);
    expect((await resetPassword(email)).status).toBe(200);
    const mails = await smtp.waitForMessagesTo(email, LIMIT + 1);
    expect(mails).toHaveLength(LIMIT + 1);
    expect(mails.at(-1)!.subject).toBe('Reset your password');
  });

  it('limits a verification link at sign-up too: the account is made, the link is not sent (logged)', async () => {
    const email = uniqueEmail('late-signup');
    for (let i = 0; i < LIMIT; i += 1) expect((await invite(email)).status).toBe(200);
    const before = server.logs.filter((line) => line.msg === VERIFICATION_REFUSED).length;
    const { response, body } = await signUp(server, { email });
    expect(response.status).toBe(200);
    const lines = await logged(VERIFICATION_REFUSED, before + 1);
    expect(lines.at(-1)).toMatchObject({ userId: body.user.id });
    expect(smtp.messagesTo(email)).toHaveLength(LIMIT);
  });
});

describe('no enumeration through the budget', () => {
  it('spends the budget of an address without an account as of one with an account: the invitation after is refused alike', async () => {
    const stranger = uniqueEmail('no-account');
    const { email: holder } = await signUp(server);
    await smtp.nextMessageTo(holder); // sign-up's link: one mail already
    for (const email of [stranger, holder]) {
      const before = server.logs.filter((line) => line.msg === RESET_REFUSED).length;
      // Up to the budget and one more: that one's refusal (logged) says every earlier request was counted.
      const left = email === holder ? LIMIT - 1 : LIMIT;
      for (let i = 0; i <= left; i += 1) expect(await (await resetPassword(email)).json()).toEqual({ status: true });
      await logged(RESET_REFUSED, before + 1);
      const refused = await invite(email);
      expect(refused.status).toBe(429);
      expect(await refused.json()).toMatchObject({ code: 'TOO_MANY_REQUESTS', message: 'Too many emails to this address, try again later.' });
    }
    expect(smtp.messagesTo(stranger)).toEqual([]);
    expect(await smtp.waitForMessagesTo(holder, LIMIT)).toHaveLength(LIMIT);
  });
});

describe('the name in the greeting', () => {
  it('is on one line, without control or invisible characters, and cut to 80 characters', async () => {
    const { email, body } = await signUp(server, { name: 'Ada' });
    await smtp.nextMessageTo(email);
    // Names also come from social providers and admins, not only through the validated sign-up body.
    await server.db.sql`update users set name = ${'Ada\u202e\u200b\nP.S. ignore the link below\t' + 'y'.repeat(150)} where id = ${body.user.id}`;
    expect((await resetPassword(email)).status).toBe(200);
    const mail = await smtp.nextMessageTo(email);
    expect(mail.text.split('\n')[0]).toBe(`Hello ${('Ada P.S. ignore the link below ' + 'y'.repeat(150)).slice(0, 79)}…,`);
    expect(mail.text).not.toMatch(/[\u200b\u202e]/);
  });
});
