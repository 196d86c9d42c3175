/**
 * LIMIT_REACHED at every plan limit, with billing configured and the real plan lookup (no
 * override): an organization without a live subscription is on free (3 workspaces, 5 members,
 * 200 AI credits, 1 GiB), one with a live subscription on its plan. At each limit the last
 * allowed call succeeds and the next is refused; with billing off none of them is refused. Searches
 * cost credits only with a paid embedding provider: the last suite plays one.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ApiClientError } from '../../clients/typescript/src/index.ts';
import { newId } from '../../src/ids.ts';
import { PLAN_LIMITS } from '../../src/credits/plans.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { createTestDatabase } from '../support/database.ts';
import type { Database } from '../../src/db/connection.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';
import { clientOf } from '../jobs/support.ts';
import { BILLING_ENV } from './support.ts';

const GiB = 1024 ** 3;
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: ApiClientError) => error,
  );

async function spend(server: TestServer, org: string, amount: number): Promise<void> {
  await server.db.sql`insert into credit_ledger (id, organization_id, amount, reason) values (${newId('crd')}, ${org}, ${amount}, 'job.create')`;
}

async function storeBytes(server: TestServer, org: string, workspaceId: string, size: number): Promise<void> {
  await server.db.sql`insert into documents (id, organization_id, workspace_id, name, content_type, size, status)
                      values (${newId('doc')}, ${org}, ${workspaceId}, 'big.pdf', 'application/pdf', ${size}, 'ready')`;
}

async function failedJob(server: TestServer, org: string): Promise<string> {
  const id = newId('job');
  await server.db.sql`insert into jobs (id, organization_id, kind, status, input, credits, error_message, finished_at)
                      values (${id}, ${org}, 'text.embed', 'failed', ${server.db.sql.json({ texts: ['again'] })}, 1, 'The job failed.', now())`;
  return id;
}

async function subscribe(server: TestServer, org: string, plan: 'pro' | 'team', status = 'active'): Promise<string> {
  const id = newId('sbs');
  await server.db.sql`insert into subscriptions (id, organization_id, plan, status, seats, payment_subscription_id)
                      values (${id}, ${org}, ${plan}, ${status}, 1, ${'sub_' + id})`;
  return id;
}

function inviteRequest(server: TestServer, user: TestUser, organizationId: string, email: string) {
  return server.fetch('/api/auth/organization/invite-member', {
    method: 'POST',
    headers: { ...user.headers, 'content-type': 'application/json' },
    body: JSON.stringify({ organizationId, email, role: 'member' }),
  });
}

function acceptRequest(server: TestServer, user: TestUser, invitationId: string) {
  return server.fetch('/api/auth/organization/accept-invitation', {
    method: 'POST',
    headers: { ...user.headers, 'content-type': 'application/json' },
    body: JSON.stringify({ invitationId }),
  });
}

const mailer = { send: async () => {} };

// One database for the file's three servers (one after the other): every test works in an
// organization of its own, so none needs a fresh database.
let db: Database;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.close());

describe.each([
  ['configured', true],
  ['not configured', false],
] as const)('billing %s', (_label, billed) => {
  let server: TestServer;
  let owner: TestUser;
  beforeAll(async () => {
    server = await startTestServer({ db, env: { RATE_LIMIT_PER_MINUTE: '100000', AUTH_RATE_LIMIT_PER_MINUTE: '100000', ...(billed ? BILLING_ENV : {}) }, overrides: { mailer } });
  });
  // An owner of their own for each test: the free plan's credits are one allowance per owner.
  beforeEach(async () => {
    owner = await createUser(server.db);
  });
  afterAll(() => server?.close());

  const api = () => clientOf(server, owner);
  /** The free plan's limit; with billing off, nothing is refused. */
  const refusedOrNot = async (call: Promise<unknown>, kind: string, limit: number) => {
    if (!billed) {
      await call;
      return;
    }
    const error = await failure(call);
    expect(error).toMatchObject({ status: 403, code: 'LIMIT_REACHED', data: { kind, limit, plan: 'free' } });
  };

  it('workspaces.create: the third workspace on free, not a fourth', async () => {
    const org = await addMembership(server.db, owner, 'owner');
    for (let i = 0; i < 3; i++) await api().workspaces.create({ organizationId: org, name: `W${i}`, slug: `w-${i}` });
    await refusedOrNot(api().workspaces.create({ organizationId: org, name: 'W3', slug: 'w-3' }), 'workspaces', 3);
  });

  it("a live subscription raises the limit to its plan's", async () => {
    const org = await addMembership(server.db, owner, 'owner');
    await subscribe(server, org, 'pro');
    for (let i = 0; i < 4; i++) await api().workspaces.create({ organizationId: org, name: `W${i}`, slug: `w-${i}` });
    const usage = await api().organizations.usage({ organizationId: org });
    expect(usage).toMatchObject({ plan: billed ? 'pro' : null, limits: billed ? PLAN_LIMITS.pro : null, usage: { workspaces: 4, members: 1, pendingInvitations: 0, aiCredits: 0 } });
  });

  it("organizations.usage counts pending invitations and the period's credits (refunds deducted) in the calendar month; billing.status lists what is above a limit", async () => {
    const org = await addMembership(server.db, owner, 'owner');
    for (let i = 0; i < 2; i++) expect((await inviteRequest(server, owner, org, `usage-${i}-${org}@example.com`)).status).toBe(200);
    await server.db.sql`insert into invitations (id, organization_id, email, role, expires_at) values (${newId('inv')}, ${org}, 'expired@example.com', 'member', now() - interval '1 hour')`;
    await spend(server, org, 250);
    await spend(server, org, -30);
    await server.db
      .sql`insert into credit_ledger (id, organization_id, amount, reason, created_at, counts_at) values (${newId('crd')}, ${org}, 1000, 'job.create', now() - interval '40 days', now() - interval '40 days')`;
    const now = new Date();
    const month = { start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)), end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)) };
    expect(await api().organizations.usage({ organizationId: org })).toEqual({
      plan: billed ? 'free' : null,
      limits: billed ? PLAN_LIMITS.free : null,
      usage: { workspaces: 0, members: 1, pendingInvitations: 2, aiCredits: 220 },
      period: month,
    });
    const status = await api().billing.status({ organizationId: org });
    expect(status.overLimit).toEqual(billed ? [{ kind: 'aiCredits', current: 220, limit: 200 }] : []);
  });

  it('inviteMember counts members and pending invitations: the fifth seat, not a sixth', async () => {
    const org = await addMembership(server.db, owner, 'owner');
    for (let i = 0; i < 4; i++) expect((await inviteRequest(server, owner, org, `seat-${i}-${org}@example.com`)).status).toBe(200);
    const refused = await inviteRequest(server, owner, org, `seat-5-${org}@example.com`);
    if (billed) {
      expect(refused.status).toBe(403);
      expect(await refused.json()).toMatchObject({ code: 'LIMIT_REACHED', data: { kind: 'members', limit: 5, plan: 'free' } });
    } else expect(refused.status).toBe(200);
  });

  it('acceptInvitation: the last seat can be taken, a seat the plan no longer has cannot', async () => {
    const org = await addMembership(server.db, owner, 'owner');
    const invitees = await Promise.all([0, 1, 2, 3, 4].map((i) => createUser(server.db, { email: `invitee-${i}-${org}@example.com` })));
    const invitations: string[] = [];
    for (const invitee of invitees.slice(0, 4)) invitations.push((await (await inviteRequest(server, owner, org, invitee.email)).json()).id);
    // Five seats taken (the owner and four invitations): accepting one keeps it at five.
    expect((await acceptRequest(server, invitees[0]!, invitations[0]!)).status).toBe(200);
    // A sixth invitation from a bigger plan (written as it would stand after a move to free).
    const extra = newId('inv');
    await server.db.sql`insert into invitations (id, organization_id, email, role, expires_at) values (${extra}, ${org}, ${invitees[4]!.email}, 'member', now() + interval '1 day')`;
    const refused = await acceptRequest(server, invitees[4]!, extra);
    if (billed) {
      expect(refused.status).toBe(403);
      expect(await refused.json()).toMatchObject({ code: 'LIMIT_REACHED', data: { kind: 'members', limit: 5, plan: 'free' } });
      expect(await server.db.sql`select 1 from members where organization_id = ${org} and user_id = ${invitees[4]!.id}`).toHaveLength(0);
    } else expect(refused.status).toBe(200);
  });

  it('jobs.create and jobs.retry: the 200th credit, not the 201st', async () => {
    const org = await addMembership(server.db, owner, 'owner');
    await spend(server, org, 198);
    const retried = await failedJob(server, org);
    await api().jobs.create({ organizationId: org, kind: 'text.embed', input: { texts: ['one'] } });
    await api().jobs.retry({ id: retried });
    await refusedOrNot(api().jobs.create({ organizationId: org, kind: 'text.embed', input: { texts: ['one'] } }), 'aiCredits', 200);
    await refusedOrNot(api().jobs.retry({ id: await failedJob(server, org) }), 'aiCredits', 200);
  });

  it('auth.organization.create: a third free organization of one user, not a fourth; one with a subscription does not count', async () => {
    const create = (slug: string) =>
      server.fetch('/api/auth/organization/create', {
        method: 'POST',
        headers: { ...owner.headers, 'content-type': 'application/json' },
        body: JSON.stringify({ name: slug, slug: `${slug}-${owner.id.slice(-10)}` }),
      });
    // A membership that is not a first ownership does not count: another user's organization, of
    // which this user became an owner later. Later for sure: two inserts in a row can share a
    // timestamp on the embedded database, and the tie then goes by the members' random ids (the
    // cause of a 403 here once).
    const other = await addMembership(server.db, await createUser(server.db), 'owner');
    await server.db.sql`update members set created_at = created_at - interval '1 minute' where organization_id = ${other}`;
    await addMembership(server.db, owner, 'owner', other);
    const created: string[] = [];
    for (let i = 0; i < 3; i++) {
      const answer = await create(`free-${i}`);
      expect(answer.status, await answer.clone().text()).toBe(200);
      created.push(((await answer.json()) as { id: string }).id);
    }
    const refused = await create('free-3');
    if (!billed) {
      expect(refused.status).toBe(200);
      return;
    }
    expect(refused.status).toBe(403);
    expect(await refused.json()).toEqual({
      defined: true,
      code: 'LIMIT_REACHED',
      status: 403,
      message: 'You own 3 organizations on the free plan, the most one user may; subscribe one of them to a paid plan, or delete one, first.',
      data: { kind: 'organizations', limit: 3, plan: 'free' },
    });
    await subscribe(server, created[0]!, 'pro');
    expect((await create('free-4')).status).toBe(200);
    expect((await create('free-5')).status).toBe(403);
  });

  it('auth.organization.create: six at once from one user, three free places: exactly three', async () => {
    const answers = await Promise.all(
      [0, 1, 2, 3, 4, 5].map((i) =>
        server.fetch('/api/auth/organization/create', {
          method: 'POST',
          headers: { ...owner.headers, 'content-type': 'application/json' },
          body: JSON.stringify({ name: `Race ${i}`, slug: `race-${i}-${owner.id.slice(-10)}` }),
        }),
      ),
    );
    const statuses = answers.map((answer) => answer.status).sort();
    expect(statuses).toEqual(billed ? [200, 200, 200, 403, 403, 403] : [200, 200, 200, 200, 200, 200]);
  });

  it('documents.createUpload: up to 1 GiB, not a byte more', async () => {
    const org = await addMembership(server.db, owner, 'owner');
    const workspace = await api().workspaces.create({ organizationId: org, name: 'Files', slug: 'files' });
    await storeBytes(server, org, workspace.id, GiB - 10);
    const input = { organizationId: org, workspaceId: workspace.id, name: 'a.txt', contentType: 'text/plain' as const };
    await api().documents.createUpload({ ...input, size: 10 });
    await refusedOrNot(api().documents.createUpload({ ...input, size: 1 }), 'storageBytes', GiB);
  });

  it('documents.complete re-checks the real size: the upload that fills 1 GiB completes, one past it does not', async () => {
    const org = await addMembership(server.db, owner, 'owner');
    const workspace = await api().workspaces.create({ organizationId: org, name: 'Files', slug: 'files' });
    await storeBytes(server, org, workspace.id, GiB - 20);
    const input = { organizationId: org, workspaceId: workspace.id, contentType: 'text/plain' as const };
    const uploads = [];
    for (const name of ['first.txt', 'second.txt']) {
      const { document, upload } = await api().documents.createUpload({ ...input, name, size: 10 });
      expect((await fetch(upload.url, { method: 'PUT', headers: upload.headers, body: Buffer.alloc(10, 'a') })).status).toBe(200);
      uploads.push(document.id);
    }
    expect(await api().documents.complete({ id: uploads[0]! })).toMatchObject({ status: 'ready', size: 10 });
    // One more byte stored meanwhile (as a bigger plan allowed before a move to free).
    await storeBytes(server, org, workspace.id, 1);
    await refusedOrNot(api().documents.complete({ id: uploads[1]! }), 'storageBytes', GiB);
  });
});

describe('documents.search with a paid embedding provider, billing configured', () => {
  let provider: Server;
  let server: TestServer;
  beforeAll(async () => {
    // An OpenAI-compatible embeddings stand-in: with it every search costs one credit.
    provider = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            object: 'list',
            data: [{ object: 'embedding', index: 0, embedding: Array.from({ length: 384 }, (_, i) => Math.cos(i)) }],
            model: 'text-embedding-3-small',
            usage: { prompt_tokens: 1, total_tokens: 1 },
          }),
        );
      });
    });
    provider.listen(0, '127.0.0.1');
    await once(provider, 'listening');
    server = await startTestServer({ db, aiService: false, env: { ...BILLING_ENV, AI_URL: `http://127.0.0.1:${(provider.address() as AddressInfo).port}` } });
  });
  afterAll(async () => {
    await server?.close();
    provider?.close();
  });

  it('the search that spends the 200th credit succeeds, the next is refused', async () => {
    const owner = await createUser(server.db);
    const org = await addMembership(server.db, owner, 'owner');
    const api = clientOf(server, owner);
    const workspace = await api.workspaces.create({ organizationId: org, name: 'Search', slug: 'search' });
    await spend(server, org, 199);
    await api.documents.search({ workspaceId: workspace.id, query: 'revenue' });
    expect(await failure(api.documents.search({ workspaceId: workspace.id, query: 'revenue' }))).toMatchObject({
      status: 403,
      code: 'LIMIT_REACHED',
      data: { kind: 'aiCredits', limit: 200, plan: 'free' },
    });
  });
});
