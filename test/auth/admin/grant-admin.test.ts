/** The first platform admin: grantAdmin / grantConfiguredAdmins, and the `grant-admin` command itself. */
import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeGrant, grantAdmin, grantConfiguredAdmins } from '../../../src/admin/grant-admin.ts';
import { openDatabase, type Database } from '../../../src/db/connection.ts';
import { createLogger } from '../../../src/logger.ts';
import { createTestDatabase, migratedDataDir } from '../../support/database.ts';
import { createUser } from '../../support/users.ts';

const now = new Date('2026-11-21T09:15:00.000Z');

describe('grantAdmin and grantConfiguredAdmins', () => {
  let db: Database;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.close());

  async function roleOf(id: string) {
    const [row] = await db.sql<{ role: string | null }[]>`select role from users where id = ${id}`;
    return row!.role;
  }

  it('makes the user with the email (any case) an admin, audited without an actor', async () => {
    const ada = await createUser(db, { email: 'Ada@Example.com' });
    const result = await grantAdmin(db.sql, '  ada@EXAMPLE.com ', { now, via: 'grant-admin' });
    expect(result).toEqual({ status: 'granted', userId: ada.id, email: 'Ada@Example.com' });
    expect(await roleOf(ada.id)).toBe('admin');
    const entries = await db.sql`select * from audit_log where target_id = ${ada.id}`;
    expect(entries).toEqual([expect.objectContaining({ action: 'user.role_changed', organization_id: null, actor_id: null, metadata: { from: null, to: 'admin', via: 'grant-admin' } })]);
    expect(describeGrant(result)).toBe(`Granted platform admin to Ada@Example.com (${ada.id}).`);
  });

  it('changes nothing for an admin already, and answers no-such-user for an unknown email', async () => {
    const root = await createUser(db, { email: 'root@example.com', role: 'admin' });
    expect(await grantAdmin(db.sql, 'root@example.com', { now, via: 'grant-admin' })).toEqual({ status: 'already-admin', userId: root.id, email: 'root@example.com' });
    expect(await db.sql`select * from audit_log where target_id = ${root.id}`).toHaveLength(0);
    const missing = await grantAdmin(db.sql, 'nobody@example.com', { now, via: 'grant-admin' });
    expect(missing).toEqual({ status: 'no-such-user', email: 'nobody@example.com' });
    expect(describeGrant(missing)).toMatch(/^No user has the email nobody@example.com\./);
  });

  it('at start, grants every existing ADMIN_EMAILS user and logs each grant', async () => {
    const grace = await createUser(db, { email: 'grace@example.com' });
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger(
      'info',
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(JSON.parse(String(chunk)));
          done();
        },
      }),
    );
    const results = await grantConfiguredAdmins(db.sql, ['grace@example.com', 'later@example.com'], logger, now);
    expect(results.map((result) => result.status)).toEqual(['granted', 'no-such-user']);
    expect(await roleOf(grace.id)).toBe('admin');
    expect(lines).toEqual([expect.objectContaining({ msg: 'platform admin granted (ADMIN_EMAILS)', userId: grace.id, email: 'grace@example.com' })]);
    const [entry] = await db.sql`select metadata from audit_log where target_id = ${grace.id}`;
    expect(entry!.metadata).toEqual({ from: null, to: 'admin', via: 'ADMIN_EMAILS' });
  });
});

describe('node src/main.ts grant-admin <email>', () => {
  const run = promisify(execFile);
  let dataDir: string;

  beforeAll(async () => {
    // A data directory the command opens itself: the migrated template, plus one user.
    dataDir = await migratedDataDir();
    const db = await openDatabase({ dataDir });
    try {
      await createUser(db, { email: 'First@Example.com' });
    } finally {
      await db.close();
    }
  });
  afterAll(() => rm(dataDir, { recursive: true, force: true }));

  function grant(...args: string[]) {
    const env = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'warn', DATABASE_URL: '' };
    return run(process.execPath, ['src/main.ts', 'grant-admin', ...args], { env, cwd: new URL('../../..', import.meta.url).pathname, timeout: 30_000 }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
    );
  }

  // One real run (about 6 s: node start, the embedded database, the migration check); the other
  // outcomes are covered through the function above.
  it('grants the user with that email and says so', async () => {
    const granted = await grant('first@example.com');
    expect(granted).toMatchObject({ code: 0, stdout: expect.stringMatching(/^Granted platform admin to First@Example\.com \(usr_[a-z2-7]+\)\.\n$/) });
    const db = await openDatabase({ dataDir });
    try {
      const [user] = await db.sql`select role from users where lower(email) = 'first@example.com'`;
      expect(user!.role).toBe('admin');
    } finally {
      await db.close();
    }
  }, 60_000);

  it('exits 2 with the usage when the email is missing', async () => {
    const result = await grant();
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/grant-admin <email>/);
  });
});
