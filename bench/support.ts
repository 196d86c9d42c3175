/**
 * What both benchmarks share: the production-like config, a migrated embedded database in a temp
 * directory (test/support/database.ts needs vitest's inject, so it is not reused here), the real
 * app on a loopback port, a bare node:http server, and the child-process load generator.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig, type Config } from '../src/config.ts';
import type { Services } from '../src/context.ts';
import { openDatabase, type Database } from '../src/db/connection.ts';
import { migrate } from '../src/db/migrations.ts';
import { buildApp, type AppOptions } from '../src/http/app.ts';
import { createLogger } from '../src/logger.ts';
import { version } from '../src/version.ts';
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
  return {
    ...db,
    async close() {
      try {
        await db.close();
      } finally {
        await rm(dataDir, { recursive: true, force: true });
      }
    },
  };
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
 * The real app on a loopback port. `close` also stops what buildApp started (the job queue and its
 * inline worker), which must happen before the database closes.
 */
export async function startFullApp(db: Database, overrides?: AppOptions['overrides'], appConfig: Config = config): Promise<Running & { services: Services }> {
  const { app, services, stop } = await buildApp({ config: appConfig, db, logger, ...(overrides ? { overrides } : {}) });
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
export function startLoader(): { run(request: LoadRequest): Promise<LoadResult>; close(): void } {
  const child = fork(fileURLToPath(new URL('./load.ts', import.meta.url)), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = once(child, 'exit').then(() => {
    throw new Error('the load generator exited');
  });
  exited.catch(() => {}); // after close() the exit is expected
  return {
    async run(request) {
      child.send(request);
      const [result] = (await Promise.race([once(child, 'message'), exited])) as [LoadResult];
      return result;
    },
    close() {
      child.disconnect();
    },
  };
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The nearest-rank percentile (p in 0..100) of `values`. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
