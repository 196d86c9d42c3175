/** src/auth/expired-sweeper.ts: expired sessions and email tokens are deleted, now and periodically. */
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { startExpiredSweeper, sweepExpired } from '../../src/auth/expired-sweeper.ts';
import { sessionPolicy } from '../../src/auth/sessions.ts';
import type { Database, Sql } from '../../src/db/connection.ts';
import { createTestDatabase } from '../support/database.ts';

const now = new Date('2026-11-20T10:00:00Z');
const ago = (ms: number) => new Date(now.getTime() - ms);
const later = (ms: number) => new Date(now.getTime() + ms);
const HOUR = 3600_000;
const DAY = 24 * HOUR;

let db: Database;
beforeAll(async () => {
  db = await createTestDatabase();
  await db.sql`insert into users (id, email, name) values ('usr_sweep', 'sweep@example.com', 'Sweep'), ('usr_admin', 'admin@example.com', 'Admin')`;
});
afterAll(() => db?.close());

beforeEach(async () => {
  await db.sql`delete from sessions`;
  await db.sql`delete from verification_tokens`;
});

async function session(id: string, o: { expiresAt: Date; lastVerifiedAt: Date; impersonatedBy?: string }) {
  await db.sql`
    insert into sessions (id, secret_hash, user_id, created_at, last_verified_at, expires_at, impersonated_by)
    values (${id}, ${Buffer.alloc(32)}, 'usr_sweep', ${ago(40 * DAY)}, ${o.lastVerifiedAt}, ${o.expiresAt}, ${o.impersonatedBy ?? null})`;
}

async function token(id: string, o: { expiresAt: Date; usedAt?: Date }) {
  await db.sql`
    insert into verification_tokens (id, token_hash, purpose, user_id, email, expires_at, used_at, created_at)
    values (${id}, ${Buffer.alloc(32)}, 'email-verification', 'usr_sweep', 'sweep@example.com', ${o.expiresAt}, ${o.usedAt ?? null}, ${ago(2 * HOUR)})`;
}

const ids = async (table: 'sessions' | 'verification_tokens') => (await db.sql`select id from ${db.sql(table)} order by id`).map((row) => row.id as string);

describe('sweepExpired', () => {
  it('deletes sessions past their absolute expiry or idle too long, and tokens past their expiry', async () => {
    await session('ses_live', { expiresAt: later(DAY), lastVerifiedAt: ago(HOUR) });
    await session('ses_absolute', { expiresAt: ago(1), lastVerifiedAt: ago(HOUR) });
    await session('ses_at_expiry', { expiresAt: now, lastVerifiedAt: ago(HOUR) });
    await session('ses_idle', { expiresAt: later(DAY), lastVerifiedAt: ago(sessionPolicy.inactivityMs + 1) });
    await session('ses_almost_idle', { expiresAt: later(DAY), lastVerifiedAt: ago(sessionPolicy.inactivityMs - 60_000) });
    await session('ses_impersonation', { expiresAt: ago(60_000), lastVerifiedAt: ago(2 * 60_000), impersonatedBy: 'usr_admin' });
    await token('vt_live', { expiresAt: later(HOUR) });
    await token('vt_used_live', { expiresAt: later(HOUR), usedAt: ago(60_000) });
    await token('vt_expired', { expiresAt: ago(1) });
    await token('vt_used_expired', { expiresAt: ago(HOUR), usedAt: ago(2 * HOUR) });

    expect(await sweepExpired(db.sql, now)).toEqual({ sessions: 4, verificationTokens: 2, rateLimits: 0, streamLeases: 0, idempotencyKeys: 0 });
    expect(await ids('sessions')).toEqual(['ses_almost_idle', 'ses_live']);
    expect(await ids('verification_tokens')).toEqual(['vt_live', 'vt_used_live']);
    // A second sweep finds nothing.
    expect(await sweepExpired(db.sql, now)).toEqual({ sessions: 0, verificationTokens: 0, rateLimits: 0, streamLeases: 0, idempotencyKeys: 0 });
  });

  it('deletes a backlog in batches', async () => {
    for (let i = 0; i < 7; i++) await session(`ses_old_${i}`, { expiresAt: ago(DAY), lastVerifiedAt: ago(2 * DAY) });
    for (let i = 0; i < 5; i++) await token(`vt_old_${i}`, { expiresAt: ago(DAY) });
    await session('ses_live', { expiresAt: later(DAY), lastVerifiedAt: now });
    expect(await sweepExpired(db.sql, now, 3)).toEqual({ sessions: 7, verificationTokens: 5, rateLimits: 0, streamLeases: 0, idempotencyKeys: 0 });
    expect(await ids('sessions')).toEqual(['ses_live']);
    expect(await ids('verification_tokens')).toEqual([]);
  });

  it("deletes the shared limiters' ended windows and the stream leases that lapsed", async () => {
    await db.sql`
      insert into rate_limits (limiter, key, count, resets_at)
      values ('ip', 'ended', 3, ${ago(1)}), ('ip', 'ends-now', 1, ${now}), ('search', 'current', 2, ${later(60_000)})`;
    // Leases run on the database's clock.
    await db.sql`
      insert into stream_leases (id, user_id, instance_id, expires_at)
      values ('lease_lapsed', 'usr_sweep', 'api_dead', now() - interval '1 second'), ('lease_held', 'usr_sweep', 'api_live', now() + interval '1 minute')`;
    expect(await sweepExpired(db.sql, now, 1)).toEqual({ sessions: 0, verificationTokens: 0, rateLimits: 2, streamLeases: 1, idempotencyKeys: 0 });
    expect((await db.sql`select key from rate_limits`).map((row) => row.key)).toEqual(['current']);
    expect((await db.sql`select id from stream_leases`).map((row) => row.id)).toEqual(['lease_held']);
    await db.sql`delete from rate_limits`;
    await db.sql`delete from stream_leases`;
  });
});

function captureLogger() {
  const lines: { level: 'info' | 'warn'; obj: Record<string, any>; msg: string }[] = [];
  return {
    lines,
    logger: {
      info: (obj: object, msg?: string) => void lines.push({ level: 'info', obj: obj as Record<string, any>, msg: msg ?? '' }),
      warn: (obj: object, msg?: string) => void lines.push({ level: 'warn', obj: obj as Record<string, any>, msg: msg ?? '' }),
    } as never,
  };
}

async function until(condition: () => boolean | Promise<boolean>, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('startExpiredSweeper', () => {
  it("sweeps at start and then every interval on an unref'd timer, and stops", async () => {
    await session('ses_expired_1', { expiresAt: ago(1), lastVerifiedAt: ago(HOUR) });
    await token('vt_expired_1', { expiresAt: ago(1) });
    const { lines, logger } = captureLogger();
    const setIntervalSpy = vi.spyOn(globalThis, 'setInterval');
    const sweeper = startExpiredSweeper({ sql: db.sql, now: () => now, logger, intervalMs: 100 });
    const timer = setIntervalSpy.mock.results[0]!.value as NodeJS.Timeout;
    setIntervalSpy.mockRestore();
    try {
      expect(timer.hasRef()).toBe(false);
      await until(() => lines.length === 1);
      expect(lines[0]).toMatchObject({ level: 'info', obj: { deleted: { sessions: 1, verificationTokens: 1 } }, msg: 'expired sessions and tokens deleted' });

      await session('ses_expired_2', { expiresAt: ago(1), lastVerifiedAt: ago(HOUR) });
      await until(async () => (await ids('sessions')).length === 0);
      await until(() => lines.length === 2);
      expect(lines[1]).toMatchObject({ obj: { deleted: { sessions: 1, verificationTokens: 0 } } });
    } finally {
      await sweeper.stop();
    }
    // Stopped: nothing is swept any more.
    await session('ses_expired_3', { expiresAt: ago(1), lastVerifiedAt: ago(HOUR) });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await ids('sessions')).toEqual(['ses_expired_3']);
    expect(lines).toHaveLength(2);
    await sweeper.runNow();
    expect(await ids('sessions')).toEqual(['ses_expired_3']);
  });

  it('logs a failed run and keeps going', async () => {
    const { lines, logger } = captureLogger();
    let failures = 0;
    const broken = (() => {
      failures++;
      return Promise.reject(new Error('database unavailable'));
    }) as unknown as Sql;
    const sweeper = startExpiredSweeper({ sql: broken, now: () => now, logger, intervalMs: 50 });
    try {
      await until(() => lines.length >= 2);
      expect(lines[0]).toMatchObject({ level: 'warn', msg: 'sweeping expired sessions and tokens failed' });
      expect(lines[0]!.obj.err).toBeInstanceOf(Error);
      expect(failures).toBeGreaterThanOrEqual(2);
    } finally {
      await sweeper.stop();
    }
  });

  it('never runs two sweeps at once, and runNow waits for the one in progress', async () => {
    const { logger } = captureLogger();
    // Every statement waits until the gate opens.
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let calls = 0;
    const slow = (() => {
      calls++;
      return gate.then(() => ({ count: 0 }));
    }) as unknown as Sql;
    const sweeper = startExpiredSweeper({ sql: slow, now: () => now, logger, intervalMs: 20 });
    try {
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect(calls).toBe(1);
      const waited = sweeper.runNow();
      open();
      await waited;
      // One sweep: one statement per table (sessions, tokens, limiter windows, stream leases, idempotency keys).
      expect(calls).toBe(5);
    } finally {
      open();
      await sweeper.stop();
    }
  });

  it('makes its first sweep once firstRunAfter settles, even when it rejects', async () => {
    for (const outcome of ['resolve', 'reject'] as const) {
      const { logger } = captureLogger();
      let calls = 0;
      const counting = (() => {
        calls++;
        return Promise.resolve({ count: 0 });
      }) as unknown as Sql;
      let settle!: () => void;
      const firstRunAfter = new Promise<void>((resolve, reject) => (settle = outcome === 'resolve' ? resolve : () => reject(new Error('the queue did not start'))));
      const sweeper = startExpiredSweeper({ sql: counting, now: () => now, logger, intervalMs: 3600_000, firstRunAfter });
      try {
        await new Promise((resolve) => setTimeout(resolve, 50));
        expect(calls).toBe(0);
        settle();
        await until(() => calls === 5);
      } finally {
        await sweeper.stop();
      }
    }
  });

  it('refuses a nonsensical interval', () => {
    expect(() => startExpiredSweeper({ sql: db.sql, now: () => now, logger: captureLogger().logger, intervalMs: 0 })).toThrow(RangeError);
  });
});
