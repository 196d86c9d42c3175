/**
 * admin.system.status: the deployment as a platform admin needs to see it, every field measured
 * now (specification, "System status"). The database and the AI service are checked live, each
 * with a short timeout; a failing check is reported in the answer (still 200), never thrown.
 * Settings appear without their secrets.
 */
import type { Handlers, Services } from '../context.ts';
import type { PaidPlan } from '../config.ts';
import { migrationStatus } from '../db/migrations.ts';
import { listBackgroundMigrations } from '../jobs/background-migrations-store.ts';
import { AiServiceError } from '../ai-service/client.ts';
import { queueStats } from '../jobs/queue-stats.ts';
import { countStaleDocuments } from '../jobs/reindex.ts';
import { JOBS_QUEUE, QUEUE_SCHEMA } from '../jobs/queue.ts';
import { LIVE_SUBSCRIPTION } from '../billing/subscriptions-store.ts';
import { authConfig } from '../system/auth-config.ts';
import { version } from '../version.ts';

const DATABASE_TIMEOUT_MS = 2_000;
const AI_TIMEOUT_MS = 2_000;
const PAID_PLANS: readonly PaidPlan[] = ['pro', 'team'];

export const systemStatusProcedures = {
  'admin.system.status': async (_input, ctx) => {
    const { services } = ctx;
    const { config } = services;
    // The database checks share one connection on the embedded database: they queue, the AI check runs alongside.
    const [database, counts, queue, ai] = await Promise.all([databaseCheck(services), platformCounts(services), queueCheck(services), aiCheck(services)]);
    return {
      version,
      environment: config.environment,
      runtime: `node ${process.version}`,
      startedAt: services.startedAt,
      uptimeSeconds: Math.max(0, Math.floor((Date.now() - services.startedAt.getTime()) / 1000)),
      counts,
      database,
      ai,
      queue: { configured: queue.configured, worker: config.worker.mode, concurrency: config.worker.concurrency, ...queue.stats },
      storage: { driver: services.storage.name, location: services.storage.location, maxUploadBytes: config.maxUploadBytes },
      billing: {
        enabled: config.billing !== null,
        // Without billing no plan can be bought, so every paid plan is unpriced; with it, a plan with no price for any interval.
        unpricedPlans: PAID_PLANS.filter((plan) => !config.billing || Object.values(config.billing.prices[plan]).every((price) => !price)),
      },
      email: { provider: config.emailProvider, from: config.emailFrom },
      auth: authConfig(config),
    };
  },
} satisfies Handlers;

/** A `select 1` round trip, then the migration state and the background migrations; any failing is reported, not thrown. */
async function databaseCheck(services: Services) {
  const started = performance.now();
  try {
    await withTimeout(services.db.sql`select 1`, DATABASE_TIMEOUT_MS, 'the database did not answer within 2 s');
  } catch (error) {
    return { ok: false, latencyMs: null, error: messageOf(error), migrations: null, backgroundMigrations: null };
  }
  const latencyMs = round(performance.now() - started);
  const migrations = await migrationStatus(services.db.sql).catch((error: unknown) => {
    services.logger.warn({ err: error }, 'system status: the migration state could not be read');
    return null;
  });
  // Before the workers first ran this release, its table may not exist yet (an API started first): null.
  const background = await listBackgroundMigrations(services.db.sql).catch((error: unknown) => {
    services.logger.warn({ err: error }, 'system status: the background migrations could not be read');
    return null;
  });
  const backgroundMigrations = background?.map(({ cursor: _cursor, ...row }) => row) ?? null;
  return { ok: true, latencyMs, error: null, migrations, backgroundMigrations };
}

/** Whole-platform counts; zeros when the database cannot be read (database.ok says why). */
async function platformCounts(services: Services) {
  const { sql } = services.db;
  try {
    const [row] = await sql<{ users: number; organizations: number; workspaces: number; subscriptions: number }[]>`
      select (select count(*) from users)::int as users,
             (select count(*) from organizations)::int as organizations,
             (select count(*) from workspaces)::int as workspaces,
             (select count(*) from subscriptions where status in ${sql(LIVE_SUBSCRIPTION)})::int as subscriptions`;
    return row!;
  } catch (error) {
    services.logger.warn({ err: error }, 'system status: the counts could not be read');
    return { users: 0, organizations: 0, workspaces: 0, subscriptions: 0 };
  }
}

/** Jobs by state from the jobs table; configured when pg-boss's queue exists to take them. */
async function queueCheck(services: Services) {
  const { sql } = services.db;
  try {
    const [queue] = await sql`select 1 from ${sql(QUEUE_SCHEMA)}.queue where name = ${JOBS_QUEUE}`;
    return { configured: queue !== undefined, stats: await queueStats(sql) };
  } catch (error) {
    services.logger.warn({ err: error }, 'system status: the queue could not be read');
    return { configured: false, stats: { depth: null, running: null, failed: null, oldestQueuedAt: null } };
  }
}

/** The companion's own health route: 200 with ok: false and problems when its configuration cannot serve. */
async function aiCheck(services: Services) {
  const base = { url: services.config.ai.url };
  try {
    const report = await services.ai.health({ timeoutMs: AI_TIMEOUT_MS });
    // A database failure is the database check's to report, not the AI service's.
    const staleDocuments = report.model ? await countStaleDocuments(services.db.sql, report.model).catch(() => null) : null;
    return {
      ...base,
      ok: report.ok,
      latencyMs: round(report.latencyMs),
      error: null,
      problems: report.problems,
      provider: report.provider,
      model: report.model,
      ocr: report.ocr,
      staleDocuments,
    };
  } catch (error) {
    return { ...base, ok: false, latencyMs: null, error: messageOf(error), problems: [], provider: null, model: null, ocr: null, staleDocuments: null };
  }
}

/** For an admin: the AI client's detail (status, network error) beside its user-facing message. */
function messageOf(error: unknown): string {
  if (error instanceof AiServiceError) return `${error.message} (${error.detail})`;
  return error instanceof Error ? error.message : String(error);
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
