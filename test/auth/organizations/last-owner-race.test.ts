/**
 * The last-owner guard with real concurrency. The embedded database has one backend, so there
 * requests already take turns (members.test.ts covers that); only a real PostgreSQL server runs
 * two transactions at the same time and shows that the row locks serialize them. So this runs
 * only with TEST_DATABASE_URL (`make test-pg`), on this file's own database on that server, which
 * the app reaches through a pool of several connections.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { externalDatabaseUrl } from '../../support/database.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';
import { addMembership, createUser } from '../../support/users.ts';
import { memberId, post, TEST_ENV } from './fixtures.ts';

describe.skipIf(!externalDatabaseUrl)('the last-owner guard on a real PostgreSQL server', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ env: TEST_ENV });
    expect(server.db.kind).toBe('external');
  });
  afterAll(() => server?.close());

  async function twoOwners() {
    const a = await createUser(server.db);
    const b = await createUser(server.db);
    const orgId = await addMembership(server.db, a, 'owner');
    await addMembership(server.db, b, 'owner', orgId);
    return { orgId, a, b, aId: await memberId(server, orgId, a), bId: await memberId(server, orgId, b) };
  }

  const owners = async (orgId: string) => (await server.db.sql`select 1 from members where organization_id = ${orgId} and role = 'owner'`).length;

  it('keeps exactly one owner when both owners demote each other, step down or leave at once', async () => {
    const races = [
      (s: Awaited<ReturnType<typeof twoOwners>>) => [
        post(server, 'update-member-role', s.a, { organizationId: s.orgId, memberId: s.bId, role: 'member' }),
        post(server, 'update-member-role', s.b, { organizationId: s.orgId, memberId: s.aId, role: 'member' }),
      ],
      (s: Awaited<ReturnType<typeof twoOwners>>) => [
        post(server, 'update-member-role', s.a, { organizationId: s.orgId, memberId: s.aId, role: 'admin' }),
        post(server, 'update-member-role', s.b, { organizationId: s.orgId, memberId: s.bId, role: 'admin' }),
      ],
      (s: Awaited<ReturnType<typeof twoOwners>>) => [post(server, 'leave', s.a, { organizationId: s.orgId }), post(server, 'leave', s.b, { organizationId: s.orgId })],
    ];
    for (const race of races) {
      for (let round = 0; round < 15; round++) {
        const s = await twoOwners();
        const statuses = (await Promise.all(race(s))).map((response) => response.status);
        expect(
          statuses.filter((status) => status === 200),
          JSON.stringify(statuses),
        ).toHaveLength(1);
        expect(await owners(s.orgId)).toBe(1);
      }
    }
  });
});
