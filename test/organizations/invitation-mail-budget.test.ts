/**
 * Invitation mail cannot be used to bomb an address (issue 40): re-sending one invitation waits a
 * cooldown, every address has one mail budget whichever organization invites it, and the names
 * a sender chose reach the mail on one line, without invisible characters, and bounded. Mail goes
 * through nodemailer to a real SMTP receiver; invitation mail is sent before the answer, so what
 * the receiver holds once a call has answered is all that call sent.
 *
 * The bursts run on one instance on the embedded database, and on two instances of one database
 * server under `make test-pg` (scripts/test-pg.sh), where the budget is counted in `rate_limits`
 * and the cooldown is read under the organization's lock.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/connection.ts';
import { newId } from '../../src/ids.ts';
import { externalDatabaseUrl } from '../support/database.ts';
import { startTestServer, type TestResponse, type TestServer } from '../support/server.ts';
import { startSmtpReceiver, type SmtpReceiver } from '../support/smtp.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';
import { post, TEST_ENV } from '../auth/organizations/fixtures.ts';
import { instanceClients } from '../concurrency/support.ts';

/** Mails one address may receive per hour here (MAIL_PER_RECIPIENT_LIMIT). */
const LIMIT = 3;
const HOUR = 3600_000;
// Starts at the real time: the users' sessions (test/support/users.ts) are made on it.
let now = new Date();
const advance = (ms: number) => {
  now = new Date(now.getTime() + ms);
};

let receiver: SmtpReceiver;
let server: TestServer;
const env = () => ({ ...TEST_ENV, EMAIL_PROVIDER: 'smtp', SMTP_URL: receiver.url, MAIL_PER_RECIPIENT_LIMIT: String(LIMIT) });

beforeAll(async () => {
  receiver = await startSmtpReceiver();
  server = await startTestServer({ aiService: false, env: env(), overrides: { now: () => now } });
});
afterAll(async () => {
  await server?.close();
  await receiver?.stop();
});

const address = (label: string) => `${label}-${newId('x').slice(2, 12)}@example.com`;

/** A new organization and its owner. */
async function organization(name = 'Olive Owner'): Promise<{ orgId: string; owner: TestUser }> {
  const owner = await createUser(server.db, { name });
  return { orgId: await addMembership(server.db, owner, 'owner'), owner };
}

const invite = (on: TestServer, owner: TestUser, orgId: string, email: string, resend?: boolean) =>
  post(on, 'invite-member', owner, { organizationId: orgId, email, role: 'member', ...(resend ? { resend } : {}) });

async function expectTooMany(response: TestResponse, retryAfter: number): Promise<void> {
  expect(response.status).toBe(429);
  expect(response.headers.get('retry-after')).toBe(String(retryAfter));
  expect(await response.json()).toMatchObject({ defined: true, code: 'TOO_MANY_REQUESTS', status: 429 });
}

describe('re-sending one invitation', () => {
  it('answers 429 with Retry-After within the cooldown after its last mail, mails nothing and changes nothing', async () => {
    const { orgId, owner } = await organization();
    const email = address('cooldown');
    const first = await invite(server, owner, orgId, email);
    expect(first.status).toBe(200);
    const invitation = await first.json();
    expect(receiver.messagesTo(email)).toHaveLength(1);

    await expectTooMany(await invite(server, owner, orgId, email, true), 60);
    advance(30_000);
    await expectTooMany(await invite(server, owner, orgId, email, true), 30);
    expect(receiver.messagesTo(email)).toHaveLength(1);
    const [row] = await server.db.sql<{ expires_at: Date }[]>`select expires_at from invitations where id = ${invitation.id}`;
    expect(row!.expires_at.toISOString()).toBe(invitation.expiresAt);

    advance(30_000);
    const resent = await invite(server, owner, orgId, email, true);
    expect(resent.status).toBe(200);
    expect(receiver.messagesTo(email)).toHaveLength(2);
    // The cooldown starts again from this mail.
    await expectTooMany(await invite(server, owner, orgId, email, true), 60);
  });
});

describe("an address's mail budget", () => {
  it('is one across organizations and inviters: past it an invitation answers 429 and is not created, until the window ends', async () => {
    const email = address('bombed');
    const senders = await Promise.all(Array.from({ length: LIMIT + 1 }, () => organization()));
    for (const { orgId, owner } of senders.slice(0, LIMIT)) expect((await invite(server, owner, orgId, email)).status).toBe(200);
    expect(receiver.messagesTo(email)).toHaveLength(LIMIT);

    const last = senders.at(-1)!;
    await expectTooMany(await invite(server, last.owner, last.orgId, email), 3600);
    expect(await server.db.sql`select id from invitations where organization_id = ${last.orgId}`).toEqual([]);
    expect(receiver.messagesTo(email)).toHaveLength(LIMIT);
    // Case aside, it is the same address.
    await expectTooMany(await invite(server, last.owner, last.orgId, email.toUpperCase()), 3600);

    advance(HOUR);
    expect((await invite(server, last.owner, last.orgId, email)).status).toBe(200);
    expect(receiver.messagesTo(email)).toHaveLength(LIMIT + 1);
  });

  it('counts re-sends too: one inviter re-sending past the cooldown gets LIMIT mails through, then 429', async () => {
    const { orgId, owner } = await organization();
    const email = address('resent');
    expect((await invite(server, owner, orgId, email)).status).toBe(200);
    for (let i = 1; i < LIMIT; i += 1) {
      advance(61_000);
      expect((await invite(server, owner, orgId, email, true)).status).toBe(200);
    }
    advance(61_000);
    const refused = await invite(server, owner, orgId, email, true);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(60);
    expect(receiver.messagesTo(email)).toHaveLength(LIMIT);
  });
});

describe('names the sender chose', () => {
  it('reach the subject and the body on one line, without control or invisible characters, cut to 80 characters', async () => {
    const inviterName = 'Mallory\u202e\u200b Admin\r\nX-Injected: yes';
    const organizationName = 'Acme\u2028Corp \u0007Bcc: victim@example.com ' + 'z'.repeat(200);
    const { orgId, owner } = await organization(inviterName);
    await server.db.sql`update organizations set name = ${organizationName} where id = ${orgId}`;
    const email = address('names');
    expect((await invite(server, owner, orgId, email)).status).toBe(200);

    const inviter = 'Mallory Admin X-Injected: yes';
    const organizationShown = ('Acme Corp Bcc: victim@example.com ' + 'z'.repeat(200)).slice(0, 79) + '…';
    const [mail] = receiver.messagesTo(email);
    expect(mail!.subject).toBe(`${inviter} invited you to join ${organizationShown}`);
    expect(mail!.text.split('\n')[0]).toBe(`${inviter} invited you to join ${organizationShown} as member.`);
    expect(mail!.text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200b\u2028\u2029\u202e]/);
    // Nothing the sender wrote became a header of its own.
    const head = mail!.raw.slice(0, mail!.raw.indexOf('\r\n\r\n'));
    expect(head).not.toMatch(/^(bcc|x-injected):/im);
  });
});

describe('at once', () => {
  /** One instance on the embedded database; two on a database server (make test-pg). */
  let instances: TestServer[] = [];
  let clients: Database[] = [];
  beforeAll(async () => {
    if (!externalDatabaseUrl) {
      instances = [server];
      return;
    }
    clients = await instanceClients(server.db, 2);
    instances = [server];
    for (const client of clients.slice(1)) instances.push(await startTestServer({ aiService: false, db: client, env: env(), overrides: { now: () => now } }));
  });
  afterAll(async () => {
    for (const instance of instances.slice(1)) await instance.close();
    for (const client of clients.slice(1)) await client.close();
  });

  it(`invitations from ${3 * LIMIT} organizations to one address, spread over the instances: ${LIMIT} mails, the rest 429`, async () => {
    const email = address('burst');
    const senders = await Promise.all(Array.from({ length: 3 * LIMIT }, () => organization()));
    const statuses = (await Promise.all(senders.map(({ orgId, owner }, i) => invite(instances[i % instances.length]!, owner, orgId, email)))).map((response) => response.status);
    // Exactly the budget while the database counts every hit; a hit it could not count in time is
    // decided by that instance's own count, by design (auth/shared-rate-limit.ts), which the log says.
    const uncounted = instances.flatMap((instance) => instance.logs).filter((entry) => entry.msg === "rate limit not counted in the database: this process's count decides").length;
    expect(statuses.every((status) => status === 200 || status === 429)).toBe(true);
    // Never because the count was asked for inside a transaction (the guard refuses a pool query there).
    expect(instances.flatMap((instance) => instance.logs).filter((entry) => entry.err?.type === 'TransactionGuardError')).toEqual([]);
    if (uncounted === 0) {
      expect(statuses.filter((status) => status === 200)).toHaveLength(LIMIT);
      // On a database server every hit of every instance is in the one shared row.
      if (externalDatabaseUrl) expect(await server.db.sql`select count from rate_limits where limiter = 'mail.recipient' and key = ${email}`).toEqual([{ count: 3 * LIMIT }]);
    } else expect(statuses.filter((status) => status === 200).length).toBeLessThanOrEqual(LIMIT * instances.length);
    expect(receiver.messagesTo(email)).toHaveLength(statuses.filter((status) => status === 200).length);
  });

  it('re-sends of one invitation, all at once over the instances: one mail', async () => {
    const { orgId, owner } = await organization();
    const email = address('race');
    expect((await invite(server, owner, orgId, email)).status).toBe(200);
    advance(61_000);
    const statuses = (await Promise.all(Array.from({ length: 6 }, (_, i) => invite(instances[i % instances.length]!, owner, orgId, email, true)))).map((response) => response.status);
    expect(statuses.toSorted()).toEqual([200, 429, 429, 429, 429, 429]);
    expect(receiver.messagesTo(email)).toHaveLength(2);
  });
});
