/**
 * Starts the real app on a loopback port against an isolated embedded database, with a fetch
 * that checks every answer against the contract and a log that tests can read.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server } from 'node:http';
import { loadConfig, type Config } from '../../src/config.ts';
import type { Database } from '../../src/db/connection.ts';
import { compose, type ComposeOptions } from '../../src/composition/compose.ts';
import { answerServerErrors } from '../../src/http/server-errors.ts';
import { createLogger } from '../../src/logger.ts';
import { startAiService, type AiService } from '../../src/ai-service/server.ts';
import { SUITE_MODEL } from '../ai-service/support.ts';
import type { Services } from '../../src/context.ts';
import { createTestDatabase } from './database.ts';
import { assertMatchesContract } from './contract-check.ts';

/** A Response whose JSON body is typed loosely: tests assert on its shape. */
export interface TestResponse extends Response {
  json(): Promise<any>;
}

export interface TestServer {
  /** http://127.0.0.1:PORT */
  origin: string;
  services: Services;
  db: Database;
  /** Every pino line written so far, parsed. */
  logs: Record<string, any>[];
  /** fetch relative to origin; the answer is checked against the contract before it is returned. */
  fetch(path: string, init?: RequestInit): Promise<TestResponse>;
  close(): Promise<void>;
}

/**
 * The typed client's `fetch` option, sent through a test server's checked fetch. The client
 * passes a URL string; a URL or a Request is read for its address, never stringified blindly.
 */
export function clientFetch(target: Pick<TestServer, 'fetch'>): typeof fetch {
  return (input, init) => target.fetch(urlOf(input), init);
}

/** The address a fetch was asked for, whichever of its three forms it came in. */
export function urlOf(input: string | URL | Request): string {
  return typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
}

export interface TestServerOptions {
  env?: Record<string, string>;
  overrides?: ComposeOptions['overrides'];
  /** Share a database between servers (e.g. to restart the app on the same data). */
  db?: Database;
  /**
   * Point AI_URL at the suite's companion AI service on a loopback port (the default; one per
   * worker process, suiteAiService below); false leaves AI_URL to `env` (e.g. a closed port, for the service being down).
   */
  aiService?: boolean;
}

/**
 * The companion AI service test servers point AI_URL at: one per worker process, started by the
 * first server that needs it and left running for the next files this process runs (vitest's
 * workers run file after file: vitest.config.ts). It holds no state a test could see besides
 * its queues, which are empty between files, and starting one cost 0.35-0.45 s of CPU per test
 * server. Tests about the AI service start their own (test/ai-service/support.ts).
 */
let suiteAi: Promise<AiService> | undefined;
function suiteAiService(): Promise<AiService> {
  suiteAi ??= startAiService({ settings: { ...loadConfig({}).ai, ...SUITE_MODEL }, host: '127.0.0.1', port: 0, logger: createLogger('silent') }).catch((error: unknown) => {
    suiteAi = undefined;
    throw error;
  });
  return suiteAi;
}

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const dataDir = await mkdtemp(join(tmpdir(), 'workspace-api-server-'));
  // Listen first, so PUBLIC_URL (and with it every signed upload address) names the real port.
  const server: Server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const ai = options.aiService === false ? null : await suiteAiService();
  const config: Config = loadConfig({
    ...(ai ? { AI_URL: ai.url } : {}),
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    VALIDATE_RESPONSES: 'true',
    SECRET: 'test-secret-test-secret-test-secret!',
    PUBLIC_URL: origin,
    // Its own data directory: local-driver uploads (and the like) never land in the repository's ./.data.
    DATA_DIR: dataDir,
    ...options.env,
  });
  const logs: Record<string, any>[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) logs.push(JSON.parse(line));
      done();
    },
  });
  const logger = createLogger(config.logLevel, sink);
  // As main.ts does: what Node's HTTP parser refuses is answered in the service's error shape.
  answerServerErrors(server, logger);
  const db = options.db ?? (await createTestDatabase());
  const { app, services, stop } = await compose({ config, db, logger, ...(options.overrides ? { overrides: options.overrides } : {}) });
  server.on('request', app);

  return {
    origin,
    services,
    db,
    logs,
    async fetch(path, init = {}): Promise<TestResponse> {
      const url = new URL(path, origin);
      const response = await fetch(url, init);
      const method = (init.method ?? 'GET').toUpperCase();
      if (method === 'HEAD' || response.status === 304 || (response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
        if (response.status !== 200 || method !== 'GET') return response;
        assertMatchesContract(method, url, response.status, response.headers.get('content-type'), undefined);
        return response;
      }
      const text = await response.clone().text();
      const json = (response.headers.get('content-type') ?? '').includes('json');
      const body = text === '' || !json ? undefined : JSON.parse(text);
      assertMatchesContract(method, url, response.status, response.headers.get('content-type'), body);
      return response;
    },
    async close() {
      server.closeAllConnections();
      server.close();
      await stop();
      if (!options.db) await db.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
