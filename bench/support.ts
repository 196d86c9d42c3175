/**
 * What both benchmarks share: the production-like config, a migrated embedded database in a temp
 * directory (test/support/database.ts needs vitest's inject, so it is not reused here), the real
 * app on a loopback port, a bare node:http server, and the child-process load generator.
 */
import { once } from 'node:events';
import { mkdtemp } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLocalEmbedder, type QueuedEmbedder } from '../src/ai-service/embedder.ts';
import { DEFAULT_MODEL_DIR } from '../src/ai-service/model-files.ts';
import { loadConfig, type Config } from '../src/config.ts';
import type { Services } from '../src/context.ts';
import { openDatabase, type Database } from '../src/db/connection.ts';
import { migrate } from '../src/db/migrations.ts';
import { compose, type ComposeOptions } from '../src/composition/compose.ts';
import { createLogger } from '../src/logger.ts';
import { version } from '../src/version.ts';
import { deletingDataDirOnClose } from '../test/support/data-dir.ts';
import { forkWorker, type ChildWorker } from './child.ts';
import type { LoadRequest, LoadResult } from './load.ts';

// Production: no response validation, no logging I/O; the rate limit is lifted so that the
// per-IP limiter still runs (its cost is part of the stack) but never answers 429.
export const benchEnv = { NODE_ENV: 'production', LOG_LEVEL: 'silent', RATE_LIMIT_PER_MINUTE: '1000000', SECRET: 'bench-secret-bench-secret-bench-secret', METRICS_TOKEN: 'bench-metrics-token' };
export const config: Config = loadConfig(benchEnv);
export const logger = createLogger(config.logLevel);

export async function openBenchDatabase(): Promise<Database> {
  const dataDir = await mkdtemp(join(tmpdir(), 'workspace-api-bench-'));
  const db = await openDatabase({ dataDir });
  await migrate(db.sql);
  return deletingDataDirOnClose(db, dataDir);
}

/** Runs `bench` on a fresh embedded database of its own, closed (and deleted) afterwards whatever happens. */
export async function onFreshDatabase<T>(bench: (db: Database) => Promise<T>): Promise<T> {
  const db = await openBenchDatabase();
  try {
    return await bench(db);
  } finally {
    await db.close();
  }
}

export interface Running {
  url: string;
  close(): Promise<void>;
}

/** Waits for a server already told to listen on 127.0.0.1:0. */
async function served(server: Server): Promise<Running> {
  if (!server.listening) await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

/**
 * The real app on a loopback port. `close` also stops what compose started (the job queue and its
 * inline worker), which must happen before the database closes.
 */
export async function startFullApp(db: Database, overrides?: ComposeOptions['overrides'], appConfig: Config = config): Promise<Running & { services: Services }> {
  const { app, services, stop } = await compose({ config: appConfig, db, logger, ...(overrides ? { overrides } : {}) });
  const running = await served(app.listen(0, '127.0.0.1'));
  return {
    ...running,
    services,
    async close() {
      try {
        await running.close();
      } finally {
        await stop();
      }
    },
  };
}

/** The floor: what node:http alone costs for the same JSON answer as system.health. */
export function startBareServer(): Promise<Running> {
  const server = createServer((_req, res) => {
    const body = JSON.stringify({ status: 'ok', version, time: new Date() });
    res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  });
  return served(server.listen(0, '127.0.0.1'));
}

/**
 * A load generator in a child process (process.execPath is the project's Node 24), kept for a
 * whole benchmark so each measurement reuses a client whose code is already optimised.
 */
export function startLoader(): ChildWorker<LoadRequest, LoadResult> {
  return forkWorker(fileURLToPath(new URL('./load.ts', import.meta.url)), [], 'the load generator');
}

export { median, percentile } from './statistics.ts';

/**
 * The bare model the ingest and indexing benchmarks compare with, as issue 38 defines it: the
 * service's model files in one inference of EMBEDDING_THREADS onnxruntime threads (two), at the
 * service's batch size and niceness, sent one batch after the other. Not the service's own
 * setup (createEmbedder: that many copies of one thread each, docs/ai-service.md), which a caller
 * sending one batch at a time would leave half idle.
 */
export function bareModel(): QueuedEmbedder {
  const { embedding, threadNice } = config.ai;
  return createLocalEmbedder(DEFAULT_MODEL_DIR, { threads: embedding.threads, batchSize: embedding.batchSize, nice: threadNice }, logger);
}
