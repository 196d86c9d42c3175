/**
 * What the document benchmarks share (indexing, api-latency, retrieval, ai-memory): the companion
 * AI service as its own process (`main.ts ai`, as `serve` starts it) or in this one, the real app
 * on a loopback port with its worker where `serve` runs it (inline on the embedded database, a
 * `main.ts worker` process on a server) and a data directory of its own (PUBLIC_URL names the
 * real port, so signed upload addresses work), tenants with signed-in users, and the upload flow.
 */
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from '../clients/typescript/src/index.ts';
import { createSession } from '../src/auth/sessions.ts';
import { loadConfig, type Config } from '../src/config.ts';
import type { Services } from '../src/context.ts';
import type { Database } from '../src/db/connection.ts';
import { loadFirstUseModules } from '../src/db/first-use-modules.ts';
import { compose } from '../src/composition/compose.ts';
import { newId } from '../src/ids.ts';
import { startSupervisedChild } from '../src/process/supervised-child.ts';
import type { Logger } from '../src/logger.ts';
import { benchEnv, logger as silent } from './support.ts';

export type Client = ReturnType<typeof createClient>;
type ContentType = Parameters<Client['documents']['createUpload']>[0]['contentType'];

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));

export interface AiProcess {
  url: string;
  apiKey: string;
  pid: number;
  close(): Promise<void>;
}

/**
 * `node src/main.ts ai` on a free loopback port with an API key, silent, waiting for the
 * `ready` message it sends over IPC once it listens.
 */
export async function forkAiService(env: Record<string, string> = {}): Promise<AiProcess> {
  const apiKey = randomBytes(24).toString('base64url');
  const child = fork(MAIN, ['ai'], {
    env: { ...process.env, ...benchEnv, AI_HOST: '127.0.0.1', AI_PORT: '0', AI_API_KEY: apiKey, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = once(child, 'exit');
  const ready = await new Promise<{ url: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the AI service did not report ready within 60 s')), 60_000);
    child.on('message', (message: { type?: string; url: string }) => {
      if (message?.type !== 'ready') return;
      clearTimeout(timer);
      resolve(message);
    });
    void exited.then(([code, signal]) => {
      clearTimeout(timer);
      reject(new Error(`the AI service exited during its start (${signal ?? `code ${code}`})`));
    });
  });
  return {
    url: ready.url,
    apiKey,
    pid: child.pid!,
    async close() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

export interface DocumentApp {
  url: string;
  config: Config;
  services: Services;
  /** Stops listening, then the queue and its worker (running jobs finish), and removes the data directory. */
  close(): Promise<void>;
}

/**
 * compose with the bench's production settings, AI_URL and AI_API_KEY pointing at `ai`, and `env`
 * on top (e.g. SEARCH_RANKING; WORKER=inline keeps the worker in this process on a server too);
 * silent unless given a logger. The worker runs where `serve` runs it by default: in this process
 * on the embedded database, and on a server in a `main.ts worker` process of its own
 * (startSupervisedChild, as `serve` starts it), so the API's event loop does not read the
 * embeddings and store the chunks.
 */
export async function startDocumentApp(db: Database, ai: { url: string; apiKey?: string }, env: Record<string, string> = {}, logger: Logger = silent): Promise<DocumentApp> {
  const dataDir = await mkdtemp(join(tmpdir(), 'workspace-api-bench-app-'));
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const appEnv: Record<string, string> = {
    ...benchEnv,
    PUBLIC_URL: url,
    DATA_DIR: dataDir,
    AI_URL: ai.url,
    ...(ai.apiKey ? { AI_API_KEY: ai.apiKey } : {}),
    ...(db.url ? { DATABASE_URL: db.url } : {}),
    ...env,
  };
  const config = loadConfig(appEnv);
  const { app, services, stop } = await compose({ config, db, logger });
  server.on('request', app);
  // As `serve` does once it listens (src/composition/commands.ts).
  if (db.kind === 'embedded') await loadFirstUseModules(db.sql);
  const worker = config.worker.mode === 'process' ? await startSupervisedChild({ command: 'worker', name: 'job worker', logger, env: () => ({ ...process.env, ...appEnv }) }) : undefined;
  return {
    url,
    config,
    services,
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
      try {
        await worker?.close();
        await stop();
      } finally {
        await rm(dataDir, { recursive: true, force: true });
      }
    },
  };
}

export interface BenchUser {
  id: string;
  token: string;
}

export interface Tenant {
  organizationId: string;
  workspaceId: string;
  /** The owner first, then the members. */
  users: BenchUser[];
}

/**
 * An organization with one workspace and `users` signed-in users (the first its owner, the rest
 * members), written as the tests write them (test/support/users.ts): rows and real sessions.
 */
export async function createTenant(db: Database, { users = 1, name = 'Bench' } = {}): Promise<Tenant> {
  const organizationId = newId('org');
  const workspaceId = newId('ws');
  await db.sql`insert into organizations (id, name, slug) values (${organizationId}, ${name}, ${organizationId.replace('_', '-')})`;
  await db.sql`insert into workspaces (id, organization_id, name, slug) values (${workspaceId}, ${organizationId}, ${name}, 'bench')`;
  const made: BenchUser[] = [];
  for (let i = 0; i < users; i++) {
    const id = newId('usr');
    await db.sql`insert into users (id, email, email_verified, name) values (${id}, ${`${id}@example.com`}, true, ${`Bench ${i}`})`;
    await db.sql`insert into members (id, organization_id, user_id, role) values (${newId('mem')}, ${organizationId}, ${id}, ${i === 0 ? 'owner' : 'member'})`;
    const { token } = await createSession(db.sql, { userId: id, now: new Date() });
    made.push({ id, token });
  }
  return { organizationId, workspaceId, users: made };
}

export function clientFor(app: { url: string }, user: BenchUser): Client {
  return createClient({ baseUrl: app.url, token: user.token });
}

/** createUpload, the signed PUT, complete: the document's id, ready to index. */
export async function uploadDocument(client: Client, tenant: Tenant, name: string, contentType: ContentType, bytes: Uint8Array): Promise<string> {
  const { document, upload } = await client.documents.createUpload({
    organizationId: tenant.organizationId,
    workspaceId: tenant.workspaceId,
    name,
    contentType,
    size: bytes.byteLength,
  });
  const put = await fetch(upload.url, { method: 'PUT', headers: upload.headers, body: bytes as Uint8Array<ArrayBuffer> });
  if (put.status !== 200) throw new Error(`PUT ${upload.url} answered ${put.status}: ${await put.text()}`);
  await client.documents.complete({ id: document.id });
  return document.id;
}

const SETTLED = ['succeeded', 'failed', 'canceled'];

/** Polls jobs.get until the job settles; throws unless it succeeded. */
export async function waitForJob(client: Client, id: string, { timeoutMs = 600_000, pollMs = 200 } = {}) {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const job = await client.jobs.get({ id });
    if (SETTLED.includes(job.status)) {
      if (job.status !== 'succeeded') throw new Error(`job ${id} ${job.status}: ${JSON.stringify(job.error)}`);
      return job;
    }
    if (performance.now() > deadline) throw new Error(`job ${id} still ${job.status} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** A process's resident set (VmRSS) and its peak (VmHWM) in MiB, from /proc (Linux). */
export async function memoryOf(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(status.match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'))?.[1] ?? NaN);
  return { rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
}
