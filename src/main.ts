/**
 * The one command line: `node src/main.ts <command>`.
 *   serve            everything for one machine: the API, the companion AI service (a child process), and the job
 *                    worker unless WORKER=off (on the embedded database when no DATABASE_URL)
 *   api              the API alone (with the job worker unless WORKER=off)
 *   worker           the job worker alone
 *   ai               the companion AI service alone (src/ai-service/), on AI_HOST:AI_PORT
 *   migrate          apply pending migrations, then exit
 *   migrate status   report shipped, applied, pending and unknown migrations as JSON
 *   grant-admin <email>  make the existing user with this email a platform admin (docs/platform-admin.md)
 * Migrations run before `serve`, `api` and `worker` start (and before grant-admin); `serve` and `api` also make the
 * existing users listed in ADMIN_EMAILS platform admins.
 *
 * A new embedded database starts as a copy of the migrated template (src/db/template.ts: 0.4 s
 * instead of initdb's 3.5-6 s); `--no-template` makes it the slow way. `serve` stops on SIGTERM or
 * SIGINT by draining (see trackRequests), then closing the database, and exits 0.
 */
import { once } from 'node:events';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { enableCompileCache, flushCompileCache } from 'node:module';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Config } from './config.ts';
import type { Database } from './db/connection.ts';
import type { Logger } from './logger.ts';

// V8's code cache on disk, for every module of the service: a restart compiles them from the
// cache, about a third of a second sooner. Node checks each file's hash, so an edited file is
// compiled afresh. Only modules loaded after this call are cached, hence the dynamic imports.
enableCompileCache(fileURLToPath(new URL('../node_modules/.cache/workspace-api/compile/', import.meta.url)));
const [{ ConfigError, loadConfig }, { openDatabase }, { embeddedDatabaseExists }, { migrate, migrationStatus }, { templateBlob }, { createLogger }] =
  await Promise.all([
    import('./config.ts'),
    import('./db/connection.ts'),
    import('./db/embedded.ts'),
    import('./db/migrations.ts'),
    import('./db/template.ts'),
    import('./logger.ts'),
  ]);

const USAGE = 'usage: node src/main.ts serve|api|worker [--no-template] | ai | migrate [status] [--no-template] | grant-admin <email>';

/** How long running requests get to finish after SIGTERM or SIGINT before their connections are cut. */
const DRAIN_TIMEOUT_MS = 10_000;

async function main(argv: string[]): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`Configuration error: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
  const logger = createLogger(config.logLevel);
  const useTemplate = !argv.includes('--no-template');
  const [command, sub] = argv.filter((arg) => arg !== '--no-template');
  switch (command) {
    case 'serve':
      return serve(config, logger, useTemplate, { ai: true });
    case 'api':
      return serve(config, logger, useTemplate, { ai: false });
    case 'worker':
      return runWorker(config, logger, useTemplate);
    case 'ai':
      return runAi(config, logger);
    case 'migrate':
      return runMigrate(config, logger, sub === 'status', useTemplate);
    case 'grant-admin':
      if (!sub) break;
      return runGrantAdmin(config, logger, sub);
  }
  console.error(USAGE);
  process.exit(2);
}

async function open(config: Config, logger: Logger, useTemplate = true): Promise<Database> {
  let loadDataDir: Blob | undefined;
  if (!config.databaseUrl && useTemplate && !(await embeddedDatabaseExists(config.dataDir))) {
    try {
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
  });
}

async function runMigrate(config: Config, logger: Logger, statusOnly: boolean, useTemplate: boolean): Promise<void> {
  const db = await open(config, logger, useTemplate);
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

async function runGrantAdmin(config: Config, logger: Logger, email: string): Promise<void> {
  const { describeGrant, grantAdmin } = await import('./admin/grant-admin.ts');
  const db = await open(config, logger);
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
async function runAi(config: Config, logger: Logger): Promise<void> {
  const supervised = process.send !== undefined;
  // Ctrl-C reaches the whole process group: a supervised child leaves SIGINT to its parent, which
  // stops it with SIGTERM once the API has drained (jobs in flight may still need it).
  if (supervised) process.on('SIGINT', () => {});
  const stop = watchStopSignals(logger, supervised ? ['SIGTERM'] : ['SIGTERM', 'SIGINT']);
  const { startAiService } = await import('./ai-service/server.ts');
  const ai = await startAiService({ settings: config.ai, logger });
  stop.serving();
  (await import('./process/supervised-child.ts')).reportReady({ url: ai.url, port: ai.port });
  await stop.requested;
  await ai.close();
  process.exit(0);
}

/**
 * The job worker alone: the queue, its workers and the housekeeping schedule, until SIGTERM or
 * SIGINT. `serve` on a database server starts it as its child (WORKER=process), which reports
 * ready over IPC and exits when that channel closes.
 */
async function runWorker(config: Config, logger: Logger, useTemplate: boolean): Promise<void> {
  const supervised = process.send !== undefined;
  // As for the AI service: Ctrl-C to the process group is the parent's to act on; it stops the
  // worker with SIGTERM once the API has drained.
  if (supervised) process.on('SIGINT', () => {});
  const stop = watchStopSignals(logger, supervised ? ['SIGTERM'] : ['SIGTERM', 'SIGINT']);
  const [{ startJobQueue }, { startWorker }, { createAiClient }, { createStorageDriver }, { resolveSecret }, { billedPlans, unbilled }, { withDeadline }] = await Promise.all([
    import('./jobs/queue.ts'),
    import('./jobs/worker.ts'),
    import('./ai-service/client.ts'),
    import('./storage/create-driver.ts'),
    import('./secret.ts'),
    import('./billing/plans.ts'),
    import('./db/deadline.ts'),
  ]);
  const db = await open(config, logger, useTemplate);
  let queue: Awaited<ReturnType<typeof startJobQueue>> | undefined;
  try {
    await migrate(db.sql, { logger });
    queue = await startJobQueue({ db, settings: config.worker, logger, worker: true });
    const storage = createStorageDriver(config, resolveSecret(config));
    const now = () => new Date();
    // The jobs' database calls get DB_JOB_DEADLINE_MS: the scope follows the fetch loops started
    // inside it to every delivery and the housekeeping (src/db/deadline.ts).
    const started = queue;
    await withDeadline(config.database.jobDeadlineMs, () => startWorker({
      queue: started, sql: db.sql, storage, ai: createAiClient({ url: config.ai.url, apiKey: config.ai.apiKey, model: config.ai.openai.model }),
      plans: config.billing ? billedPlans(db.sql, now) : unbilled, maxCharacters: config.ai.extraction.maxCharacters,
      now, logger, concurrency: config.worker.concurrency, batchSize: config.worker.batchSize,
    }));
  } catch (error) {
    await queue?.stop(0).catch(() => undefined);
    await db.close().catch(() => undefined);
    throw error;
  }
  stop.serving();
  (await import('./process/supervised-child.ts')).reportReady();
  const signal = await stop.requested;
  stop.draining();
  logger.info({ signal, timeoutMs: DRAIN_TIMEOUT_MS }, 'shutting down: letting running jobs finish');
  let exitCode = 0;
  try {
    await queue.stop(DRAIN_TIMEOUT_MS);
    await db.close();
  } catch (error) {
    exitCode = 1;
    logger.error({ error: error instanceof Error ? error.message : String(error) }, 'error while shutting down');
  }
  process.exit(exitCode);
}

async function serve(config: Config, logger: Logger, useTemplate: boolean, parts: { ai: boolean }): Promise<void> {
  const stop = watchStopSignals(logger);
  // The HTTP layer's modules load while the database starts (PGlite compiles its WebAssembly off
  // the main thread). Awaited below; the catch only keeps a failure from counting as unhandled
  // before then.
  const appModule = import('./http/app.ts');
  const adminModule = import('./admin/grant-admin.ts');
  const sweeperModule = import('./auth/expired-sweeper.ts');
  const aiModule = import('./ai-service/child-process.ts');
  for (const loading of [appModule, adminModule, sweeperModule, aiModule]) loading.catch(() => undefined);

  const db = await open(config, logger, useTemplate);
  let server: Server;
  let drain: ReturnType<typeof trackRequests>;
  let sweeper: { stop(): Promise<void> } | undefined;
  let ai: { url: string; apiKey: string; close(): Promise<void> } | undefined;
  let stopJobs: (() => Promise<void>) | undefined;
  let worker: { close(): Promise<void> } | undefined;
  try {
    // The companion first, in a process of its own: the inline worker calls it as soon as a job is queued.
    if (parts.ai) ai = await (await aiModule).startAiChild(config.ai, logger);
    // AI_PORT=0 takes any free port; the default AI_URL then names the one taken. The client sends
    // the key the child was given (a fresh one when AI_API_KEY is unset).
    if (ai) config = { ...config, ai: { ...config.ai, url: config.ai.port === 0 ? ai.url : config.ai.url, apiKey: ai.apiKey } };
    await migrate(db.sql, { logger });
    await (await adminModule).grantConfiguredAdmins(db.sql, config.adminEmails, logger, new Date());
    // Expired sessions and verification tokens go at start and hourly.
    sweeper = (await sweeperModule).startExpiredSweeper({ sql: db.sql, now: () => new Date(), logger });
    const built = await (await appModule).buildApp({ config, db, logger });
    const { app } = built;
    stopJobs = built.stop;
    // WORKER=process (the default on a database server): the worker in a child of its own, with its
    // own event loop and core, so jobs keep up while the API is busy, and the API's latency does not
    // depend on the jobs. It reaches the AI service this process started, with its key.
    if (config.worker.mode === 'process') {
      const { startSupervisedChild } = await import('./process/supervised-child.ts');
      const workerEnv = { ...process.env, AI_URL: config.ai.url, ...(config.ai.apiKey ? { AI_API_KEY: config.ai.apiKey } : {}) };
      worker = await startSupervisedChild({ command: 'worker', name: 'job worker', logger, env: () => workerEnv });
    }
    // What Node's HTTP parser refuses by itself (a bad Content-Length, headers too large, an
    // unknown Expect) is answered in the service's error shape too, with an X-Request-Id.
    const { answerServerErrors } = await import('./http/server-errors.ts');
    server = answerServerErrors(app.listen(config.port, config.host), logger);
    drain = trackRequests(server);
    // Node's default 300 s would cut off a slow 25 MiB upload long before its address (15 minutes) expires.
    server.requestTimeout = 15 * 60_000;
    await once(server, 'listening');
  } catch (error) {
    // A start that fails (a changed migration, a port in use) still leaves the database closed and unlocked.
    await sweeper?.stop();
    await stopJobs?.().catch(() => undefined);
    await worker?.close().catch(() => undefined);
    await ai?.close().catch(() => undefined);
    await db.close().catch(() => undefined);
    throw error;
  }
  const { port } = server.address() as AddressInfo;
  logger.info(
    { url: config.publicUrl, host: config.host, port, database: db.kind, ai: ai?.url ?? config.ai.url, worker: config.worker.mode, startMs: Math.round(performance.now()) },
    'listening',
  );
  flushCompileCache();
  stop.serving();

  // A signal during the start is acted on here, once the database is open and consistent.
  const signal = await stop.requested;
  stop.draining();
  const started = performance.now();
  const drained = drain(DRAIN_TIMEOUT_MS, stop.repeated); // no longer accepting connections once this returns
  logger.info({ signal, timeoutMs: DRAIN_TIMEOUT_MS }, 'shutting down: draining requests');
  let exitCode = 0;
  try {
    logger.info(await drained, 'requests drained');
    await sweeper?.stop();
    await stopJobs!(); // running jobs finish (a job cut off is picked up again after its lease)
    await worker?.close(); // it drains its running jobs the same way
    await ai?.close();
    await db.close();
  } catch (error) {
    exitCode = 1;
    logger.error({ error: error instanceof Error ? error.message : String(error) }, 'error while shutting down');
  }
  logger.info({ ms: Math.round(performance.now() - started), exitCode }, 'stopped');
  process.exit(exitCode);
}

/**
 * SIGTERM or SIGINT asks for a graceful stop (`requested`); one during the start is acted on once
 * the start has finished. A second one during the drain skips the rest of it (`repeated`); a
 * second one during the start, or a third, exits at once.
 */
function watchStopSignals(logger: Logger, signals: NodeJS.Signals[] = ['SIGTERM', 'SIGINT']): { requested: Promise<NodeJS.Signals>; repeated: Promise<void>; serving(): void; draining(): void } {
  let phase: 'starting' | 'serving' | 'draining' = 'starting';
  let count = 0;
  let request!: (signal: NodeJS.Signals) => void;
  let repeat!: () => void;
  const requested = new Promise<NodeJS.Signals>((resolve) => (request = resolve));
  const repeated = new Promise<void>((resolve) => (repeat = resolve));
  const handle = (signal: NodeJS.Signals) => {
    count++;
    if (count === 1) {
      if (phase === 'starting') logger.info({ signal }, 'stopping once the start has finished (another signal stops at once)');
      request(signal);
    } else if (count === 2 && phase === 'draining') {
      logger.warn({ signal }, 'second signal: closing the remaining connections now');
      repeat();
    } else {
      logger.warn({ signal }, 'stopping at once');
      process.exit(130);
    }
  };
  for (const signal of signals) process.on(signal, handle);
  return {
    requested,
    repeated,
    serving() {
      phase = 'serving';
    },
    draining() {
      phase = 'draining';
    },
  };
}

/**
 * Remembers the requests in flight, and answers the function that drains the server: it stops
 * accepting connections and closes the idle keep-alive ones; requests already running finish,
 * and their connections close after the response (`Connection: close` when the headers are not
 * sent yet, otherwise once it ends). Server-sent event streams end only when their client leaves,
 * so they are closed at once (EventSource clients reconnect, with Last-Event-ID, to a running
 * instance). What still runs after timeoutMs, or when `cutNow` resolves, is cut.
 */
function trackRequests(server: Server): (timeoutMs: number, cutNow: Promise<void>) => Promise<{ drained: boolean; cut: number; ms: number }> {
  const running = new Set<ServerResponse>();
  let draining = false;
  server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) => {
    running.add(res);
    if (draining) closeConnectionAfter(res); // a further request on a keep-alive connection
    res.once('close', () => {
      running.delete(res);
      // Its connection is idle now, unless the response closed it: close it (the last one lets the server close).
      if (draining) server.closeIdleConnections();
    });
  });

  return async (timeoutMs, cutNow) => {
    const started = performance.now();
    draining = true;
    const closed = once(server, 'close');
    server.close(); // also closes idle keep-alive connections
    for (const res of running) {
      if (isEventStream(res)) res.destroy();
      else closeConnectionAfter(res);
    }
    server.closeIdleConnections();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'cut'>((resolve) => {
      timer = setTimeout(() => resolve('cut'), timeoutMs);
    });
    const outcome = await Promise.race([closed.then(() => 'drained' as const), timeout, cutNow.then(() => 'cut' as const)]);
    clearTimeout(timer);
    const cut = running.size;
    if (outcome === 'cut') {
      server.closeAllConnections();
      await closed;
    }
    return { drained: outcome === 'drained', cut, ms: Math.round(performance.now() - started) };
  };
}

function closeConnectionAfter(res: ServerResponse): void {
  if (!res.headersSent) res.setHeader('Connection', 'close');
}

function isEventStream(res: ServerResponse): boolean {
  return String(res.getHeader('content-type') ?? '').startsWith('text/event-stream');
}

main(process.argv.slice(2)).catch((error: unknown) => {
  // Startup failures (a changed migration, an unreachable database) end the process with the reason.
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
