/**
 * What each command of the command line (main.ts) runs: open the database, migrate, compose the
 * service (compose.ts) and start its parts, then stop them in reverse order on SIGTERM or SIGINT
 * (shutdown.ts). Modules load lazily, so a command pays only for what it uses.
 */
import { once } from 'node:events';
import type { Server } from 'node:http';
import { flushCompileCache } from 'node:module';
import { BlockList, isIP, type AddressInfo } from 'node:net';
import type { Config } from '../config.ts';
import { openDatabase, type Database } from '../db/connection.ts';
import { embeddedDatabaseExists } from '../db/embedded.ts';
import { migrate, migrationStatus } from '../db/migrations.ts';
import { generateApiKey } from '../ai-service/api-key.ts';
import type { Logger } from '../logger.ts';
import type { Composition } from './compose.ts';
import { DRAIN_TIMEOUT_MS, stopTracing, trackRequests, watchStopSignals } from './shutdown.ts';
import { childTracingEnvironment, startTracing } from '../telemetry/tracing.ts';

/**
 * The database the configuration names: a server (DATABASE_URL) or the embedded one, new ones from
 * the migrated template. The template's module is loaded only for a new one: a restart opens its
 * database without it (bench/start.ts).
 */
export async function openDatabaseFor(config: Config, logger: Logger, useTemplate = true, onStarting?: () => void): Promise<Database> {
  let loadDataDir: Blob | undefined;
  if (!config.databaseUrl && useTemplate && !(await embeddedDatabaseExists(config.dataDir))) {
    try {
      const { templateBlob } = await import('./database-template.ts');
      loadDataDir = await templateBlob({ logger });
      logger.info({ dataDir: config.dataDir }, 'new embedded database: starting from the migrated template');
    } catch (error) {
      logger.warn({ error: error instanceof Error ? error.message : String(error) }, 'no migrated template; creating the embedded database from scratch');
    }
  }
  return openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    logger,
    ...config.database, // timeouts and the transaction guard (DB_* settings)
    ...(loadDataDir ? { loadDataDir } : {}),
    ...(onStarting ? { onStarting } : {}),
  });
}

export async function runMigrate(config: Config, logger: Logger, statusOnly: boolean, useTemplate: boolean): Promise<void> {
  const db = await openDatabaseFor(config, logger, useTemplate);
  try {
    if (statusOnly) {
      console.log(JSON.stringify(await migrationStatus(db.sql), null, 2));
    } else {
      const applied = await migrate(db.sql, { logger });
      logger.info({ applied }, applied.length > 0 ? 'migrations applied' : 'database is up to date');
    }
  } finally {
    await db.close();
  }
}

export async function runGrantAdmin(config: Config, logger: Logger, email: string): Promise<void> {
  const { describeGrant, grantAdmin } = await import('../admin/grant-admin.ts');
  const db = await openDatabaseFor(config, logger);
  let result;
  try {
    await migrate(db.sql, { logger });
    result = await grantAdmin(db.sql, email, { now: new Date(), via: 'grant-admin' });
  } finally {
    await db.close();
  }
  if (result.status === 'no-such-user') {
    console.error(describeGrant(result));
    process.exit(1);
  }
  console.log(describeGrant(result));
}

/**
 * The companion AI service alone, until SIGTERM or SIGINT. Started by `serve` (ai-service/child-process.ts),
 * it reports its address over the IPC channel and exits when that channel closes (its parent is gone).
 */
export async function runAi(config: Config, logger: Logger): Promise<void> {
  const refusal = openAiServiceRefusal(config);
  if (refusal) throw new Error(refusal);
  // Its own SDK and service name (serve passes its OTEL_* variables on: ai-service/child-process.ts).
  const tracing = await startTracing('workspace-api-ai');
  const supervised = process.send !== undefined;
  // Ctrl-C reaches the whole process group: a supervised child leaves SIGINT to its parent, which
  // stops it with SIGTERM once the API has drained (jobs in flight may still need it).
  if (supervised) process.on('SIGINT', () => {});
  const stop = watchStopSignals(logger, supervised ? ['SIGTERM'] : ['SIGTERM', 'SIGINT']);
  const { startAiService } = await import('../ai-service/server.ts');
  const ai = await startAiService({ settings: config.ai, logger });
  stop.serving();
  (await import('../process/supervised-child.ts')).reportReady({ url: ai.url, port: ai.port });
  await stop.requested;
  await ai.close();
  await stopTracing(tracing, logger);
  process.exit(0);
}

/**
 * Why `ai` must not start, if it must not: in production, on an address other hosts can reach,
 * without AI_API_KEY it would answer anyone (embeddings and extraction on this machine's CPU and
 * memory, files parsed for strangers). Outside production an open companion is a developer's
 * choice; on loopback only this machine reaches it. (`serve` always gives its child a key.)
 */
export function openAiServiceRefusal(config: Config): string | undefined {
  if (config.environment !== 'production' || config.ai.apiKey || isLoopback(config.ai.host)) return undefined;
  return `Refusing to start the AI service: AI_HOST is ${config.ai.host}, an address other machines can reach, and AI_API_KEY is not set, so it would answer anyone (NODE_ENV=production). Set AI_API_KEY (and give the API the same key), or listen on loopback (AI_HOST=127.0.0.1).`;
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');
LOOPBACK.addSubnet('::ffff:127.0.0.0', 104, 'ipv6');

function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  const address = host.replace(/^\[(.*)\]$/, '$1');
  const family = isIP(address);
  return family !== 0 && LOOPBACK.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * The job worker alone: the queue, its workers and the housekeeping schedule, until SIGTERM or
 * SIGINT. `serve` on a database server starts it as its child (WORKER=process), which reports
 * ready over IPC and exits when that channel closes.
 */
export async function runWorker(config: Config, logger: Logger, useTemplate: boolean): Promise<void> {
  const supervised = process.send !== undefined;
  // As for the AI service: Ctrl-C to the process group is the parent's to act on; it stops the
  // worker with SIGTERM once the API has drained.
  if (supervised) process.on('SIGINT', () => {});
  const stop = watchStopSignals(logger, supervised ? ['SIGTERM'] : ['SIGTERM', 'SIGINT']);
  const tracing = await startTracing('workspace-api-worker');
  const { compose } = await import('./compose.ts');
  const db = await openDatabaseFor(config, logger, useTemplate);
  let worker: Composition;
  try {
    await migrate(db.sql, { logger });
    worker = await compose({ config, db, logger, role: 'worker' });
  } catch (error) {
    await db.close().catch(() => undefined);
    await stopTracing(tracing, logger);
    throw error;
  }
  stop.serving();
  (await import('../process/supervised-child.ts')).reportReady();
  const signal = await stop.requested;
  stop.draining();
  logger.info({ signal, timeoutMs: DRAIN_TIMEOUT_MS }, 'shutting down: letting running jobs finish');
  let exitCode = 0;
  try {
    await worker.stop(DRAIN_TIMEOUT_MS);
    await db.close();
  } catch (error) {
    exitCode = 1;
    logger.error({ error: error instanceof Error ? error.message : String(error) }, 'error while shutting down');
  }
  await stopTracing(tracing, logger);
  process.exit(exitCode);
}

export async function serve(config: Config, logger: Logger, useTemplate: boolean, parts: { ai: boolean }): Promise<void> {
  const stop = watchStopSignals(logger);
  // Before anything makes a span (the database's open, migrations); nothing is loaded when off.
  const tracing = await startTracing('workspace-api');
  // The companion, in a process of its own, starts once the app listens: its process start (0.5 s
  // of CPU) would otherwise take a core from the database's open and the app's, which is what a
  // start is measured against (bench/start.ts, the floor; issue 39). Nothing waits for it when its
  // address is known in advance (AI_PORT set, the default): /readyz asks the database only, and the
  // inline worker takes jobs once the child listens (compose's workAfter). With AI_PORT=0 or a
  // worker process it starts once the database is open and is awaited. The catches only keep a
  // failure from counting as unhandled before it is awaited.
  const aiModule = import('../ai-service/child-process.ts');
  aiModule.catch(() => undefined);
  // When each part of the start finished, ms since the process started (the `listening` log line; bench/start.ts).
  const phases: Record<string, number> = {};
  const done = (phase: string) => (phases[phase] = Math.round(performance.now()));
  // The HTTP layer's modules load while the database starts, but only once its thread runs: loading
  // them takes this thread a few hundred milliseconds, and begun earlier they held up the thread's
  // start by as much (the thread started 1.0 s into the process instead of 0.4 s). On two cores the
  // start is bound by CPU either way (the AI child, PGlite and these modules: restart 1.6-1.7 s
  // before and after, bench/start.ts); with more cores PGlite opens alongside instead of after.
  let threadStarted!: () => void;
  const starting = new Promise<void>((resolve) => (threadStarted = resolve));
  const opening = openDatabaseFor(config, logger, useTemplate, threadStarted);
  await Promise.race([starting, opening.catch(() => undefined)]);
  const appModule = import('./compose.ts');
  const adminModule = import('../admin/grant-admin.ts');
  const sweeperModule = import('../auth/expired-sweeper.ts');
  const serverErrorsModule = import('../http/server-errors.ts');
  for (const loading of [appModule, adminModule, sweeperModule, serverErrorsModule]) loading.catch(() => undefined);
  const db = await opening;
  done('database');
  // The key the child demands, chosen here so the app's client knows it before the child listens.
  const aiSettings = parts.ai ? { ...config.ai, apiKey: config.ai.apiKey ?? generateApiKey() } : undefined;
  // Launched at once when the app needs its address or a worker process needs it as it starts;
  // otherwise once the app listens, so that its start does not share the cores with the child's.
  const aiFirst = config.ai.port === 0 || config.worker.mode === 'process';
  let launchAi!: () => void;
  const launched = new Promise<void>((resolve) => (launchAi = resolve));
  let aiLaunched = false;
  const launch = () => {
    aiLaunched = true;
    launchAi();
  };
  const aiStarting = aiSettings ? launched.then(() => aiModule).then((module) => module.startAiChild(aiSettings, logger)) : undefined;
  aiStarting?.catch(() => undefined);
  if (aiFirst) launch();
  aiStarting?.then(
    () => done('ai'),
    () => undefined,
  );
  let server: Server;
  let drain: ReturnType<typeof trackRequests>;
  let sweeper: { stop(): Promise<void> } | undefined;
  let ai: { url: string; apiKey: string; close(): Promise<void> } | undefined;
  let stopJobs: (() => Promise<void>) | undefined;
  let jobsStarted: Promise<void>;
  let queueStarted: Promise<void>;
  let worker: { close(): Promise<void> } | undefined;
  try {
    // AI_PORT=0 takes any free port, known once the child listens; the default AI_URL then names
    // the one taken. A worker process reaches the child as soon as it starts: it is started after.
    if (aiStarting && aiFirst) ai = await aiStarting;
    // The client sends the key the child was given (a fresh one when AI_API_KEY is unset).
    if (aiSettings) config = { ...config, ai: { ...config.ai, url: ai && config.ai.port === 0 ? ai.url : config.ai.url, apiKey: aiSettings.apiKey } };
    await migrate(db.sql, { logger });
    done('migrations');
    await (await adminModule).grantConfiguredAdmins(db.sql, config.adminEmails, logger, new Date());
    const built = await (await appModule).compose({ config, db, logger, workAfter: aiStarting });
    done('app');
    const { app } = built;
    stopJobs = built.stop;
    jobsStarted = built.started;
    queueStarted = built.services.queue.started;
    // Expired sessions and verification tokens go once the job queue has started, then hourly:
    // the start's own statements and the first readiness probes go first on an embedded
    // database's one connection (bench/start.ts).
    sweeper = (await sweeperModule).startExpiredSweeper({ sql: db.sql, now: () => new Date(), logger, firstRunAfter: queueStarted });
    // WORKER=process (the default on a database server): the worker in a child of its own, with its
    // own event loop and core, so jobs keep up while the API is busy, and the API's latency does not
    // depend on the jobs. It reaches the AI service this process started, with its key.
    if (config.worker.mode === 'process') {
      const { startSupervisedChild } = await import('../process/supervised-child.ts');
      const workerEnv = { ...process.env, ...childTracingEnvironment(process.env, 'worker'), AI_URL: config.ai.url, ...(config.ai.apiKey ? { AI_API_KEY: config.ai.apiKey } : {}) };
      worker = await startSupervisedChild({ command: 'worker', name: 'job worker', logger, env: () => workerEnv });
      done('worker');
    }
    // What Node's HTTP parser refuses by itself (a bad Content-Length, headers too large, an
    // unknown Expect) is answered in the service's error shape too, with an X-Request-Id.
    const { answerServerErrors } = await serverErrorsModule;
    server = answerServerErrors(app.listen(config.port, config.host), logger);
    drain = trackRequests(server);
    // Node's default 300 s would cut off a slow 25 MiB upload long before its address (15 minutes) expires.
    server.requestTimeout = 15 * 60_000;
    await once(server, 'listening');
    launch();
  } catch (error) {
    // A start that fails (a changed migration, a port in use) still leaves the database closed and unlocked.
    await sweeper?.stop();
    await stopJobs?.().catch(() => undefined);
    await worker?.close().catch(() => undefined);
    if (aiLaunched) await (ai ?? (await aiStarting?.catch(() => undefined)))?.close().catch(() => undefined);
    await db.close().catch(() => undefined);
    await stopTracing(tracing, logger);
    throw error;
  }
  const { port } = server.address() as AddressInfo;
  logger.info({ url: config.publicUrl, host: config.host, port, database: db.kind, ai: ai?.url ?? config.ai.url, worker: config.worker.mode, startMs: Math.round(performance.now()), phases }, 'listening');
  flushCompileCache();
  stop.serving();
  // `backup` asks this process through DATA_DIR/control (embedded database only; docs/backups.md), and the schedule, if set.
  const backups = import('../backup/control-channel.ts').then((channel) =>
    channel.serveBackups({ dataDir: config.dataDir, db, localUploads: config.storage.driver === 'local', logger, ...(config.backupSchedule ? { schedule: config.backupSchedule } : {}) }),
  );
  // Once pg-boss has started, not at `listening`: until then its first statements and the first
  // readiness probes share the database's one connection, and the modules' 60 ms on its thread
  // held the first /readyz back (bench/start.ts). The worker registers after that start (with the
  // AI child, once the child listens). A queue that cannot start stops the service below.
  if (db.kind === 'embedded') {
    queueStarted
      .then(
        async () => {
          const { loadFirstUseModules } = await import('../db/first-use-modules.ts');
          await loadFirstUseModules(db.sql);
        },
        () => undefined,
      )
      .catch((error: unknown) => logger.warn({ err: error }, 'loading the database modules ahead of their first use failed; the first search will'));
  }

  // The queue and the inline worker finish starting while the API serves (compose.ts, `started`):
  // a queue that cannot start stops the service as a failed start would, exit code 1.
  const jobsFailed = jobsStarted.then(
    () => {
      logger.info({ ms: Math.round(performance.now()) }, 'job queue started');
      return new Promise<never>(() => {});
    },
    (error: unknown) => error,
  );
  // An AI child that could not start (its port taken) stops the service, as it did before it listened.
  const aiFailed = (aiStarting ?? new Promise<never>(() => {})).then(
    (child) => {
      ai = child;
      return new Promise<never>(() => {});
    },
    (error: unknown) => error,
  );
  // A signal during the start is acted on here, once the database is open and consistent.
  const ending = await Promise.race([
    stop.requested.then((signal) => ({ signal })),
    jobsFailed.then((error) => ({ error, part: 'the job queue' })),
    aiFailed.then((error) => ({ error, part: 'the AI service' })),
  ]);
  const signal = 'signal' in ending ? ending.signal : undefined;
  if ('error' in ending) logger.error({ err: ending.error }, `${ending.part} could not start: stopping`);
  stop.draining();
  const started = performance.now();
  const drained = drain(DRAIN_TIMEOUT_MS, stop.repeated); // no longer accepting connections once this returns
  logger.info({ signal, timeoutMs: DRAIN_TIMEOUT_MS }, 'shutting down: draining requests');
  let exitCode = 'error' in ending ? 1 : 0;
  try {
    logger.info(await drained, 'requests drained');
    await sweeper?.stop();
    await (await backups.catch(() => undefined))?.close(); // a backup in progress holds the connection: it ends first
    await stopJobs(); // running jobs finish (a job cut off is picked up again after its lease)
    await worker?.close(); // it drains its running jobs the same way
    await (ai ?? (await aiStarting?.catch(() => undefined)))?.close();
    await db.close();
  } catch (error) {
    exitCode = 1;
    logger.error({ error: error instanceof Error ? error.message : String(error) }, 'error while shutting down');
  }
  logger.info({ ms: Math.round(performance.now() - started), exitCode }, 'stopped');
  await stopTracing(tracing, logger);
  process.exit(exitCode);
}
