// `backup` and `restore` as real processes (docs/backups.md): a backup taken from a running service
// while clients upload documents is restored into a new DATA_DIR, a service started on it has every
// document acknowledged before the backup began, byte for byte; restore refuses a directory in use
// or not empty; with the service stopped, backup opens the database itself; and backup refuses
// with DATABASE_URL. Every step waits for an event (a log line, an
// answer, an exit), never for a duration.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BackupManifest } from '../../src/backup/manifest.ts';
import { openDatabase } from '../../src/db/connection.ts';
import { migratedDataDir } from '../support/database.ts';
import { spawnService, type ServiceProcess } from '../support/processes.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `node src/main.ts <args>` to its end, on the embedded database unless `env` names a DATABASE_URL. */
function command(args: string[], env: NodeJS.ProcessEnv): Promise<Result> {
  const fullEnv: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'warn', NODE_ENV: 'development', ...env };
  if (!env.DATABASE_URL) delete fullEnv.DATABASE_URL;
  const child = spawn(process.execPath, ['src/main.ts', ...args], { cwd: root, env: fullEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

interface Api {
  origin: string;
  service: ServiceProcess;
}

async function startApi(dataDir: string): Promise<Api> {
  const service = spawnService('api', { DATA_DIR: dataDir, WORKER: 'off', RATE_LIMIT_PER_MINUTE: '100000' }, { withoutDatabaseUrl: true });
  const port = Number((await service.logged('listening')).port);
  await service.logged('control channel listening');
  return { origin: `http://127.0.0.1:${port}`, service };
}

/** A signed address the service made for its public URL, sent to where it listens. */
const local = (api: Api, url: string) => {
  const parsed = new URL(url);
  return `${api.origin}${parsed.pathname}${parsed.search}`;
};

async function call(api: Api, user: TestUser, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${api.origin}/api/v1${path}`, {
    method,
    headers: { ...user.headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const answer = (await response.json()) as Record<string, unknown>;
  if (response.status !== 200) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(answer)}`);
  return answer;
}

/** createUpload, PUT, complete: the document's id once complete has answered. */
async function upload(api: Api, user: TestUser, organizationId: string, workspaceId: string, bytes: Buffer): Promise<string> {
  const { document, upload: target } = (await call(api, user, 'POST', '/documents', { organizationId, workspaceId, name: 'notes.txt', contentType: 'text/plain', size: bytes.length })) as {
    document: { id: string };
    upload: { url: string; headers: Record<string, string> };
  };
  const put = await fetch(local(api, target.url), { method: 'PUT', headers: target.headers, body: bytes });
  if (put.status !== 200) throw new Error(`PUT: ${put.status} ${await put.text()}`);
  await call(api, user, 'POST', `/documents/${document.id}/complete`);
  return document.id;
}

async function download(api: Api, user: TestUser, id: string): Promise<Buffer> {
  const { url } = (await call(api, user, 'GET', `/documents/${id}/download-url`)) as { url: string };
  const file = await fetch(local(api, url));
  expect(file.status).toBe(200);
  return Buffer.from(await file.arrayBuffer());
}

describe('backup and restore of the embedded database and local uploads', () => {
  let scratch: string;
  let dataDir: string;
  let user: TestUser;
  let org: string;
  const apis: Api[] = [];
  let refusedWithUrl: Promise<Result>;

  beforeAll(async () => {
    dataDir = await migratedDataDir();
    scratch = await mkdtemp(`${dataDir}-backups-`);
    // Started now, to run while the rest is set up: it must refuse before it touches anything.
    refusedWithUrl = command(['backup', join(scratch, 'never')], { DATA_DIR: dataDir, DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
    const db = await openDatabase({ dataDir });
    try {
      user = await createUser(db);
      org = await addMembership(db, user, 'owner');
    } finally {
      await db.close();
    }
  }, 30_000);

  afterAll(async () => {
    for (const api of apis) await api.service.stop();
    await rm(dataDir, { recursive: true, force: true });
    await rm(scratch, { recursive: true, force: true });
  });

  it('a backup taken while clients write holds every write acknowledged before it began; restore refuses a directory in use or not empty; a stopped service is backed up by the command', async () => {
    const api = await startApi(dataDir);
    apis.push(api);
    const workspace = (await call(api, user, 'POST', '/workspaces', { organizationId: org, name: 'Kept', slug: 'kept' })) as { id: string };

    // Three clients upload documents one after another until told to stop; each records what was acknowledged, and when.
    const acknowledged: { id: string; bytes: Buffer; at: number }[] = [];
    let writing = true;
    let firstAcks!: () => void;
    const enough = new Promise<void>((resolve) => (firstAcks = resolve));
    const client = async (n: number) => {
      for (let i = 0; writing; i++) {
        const bytes = Buffer.concat([Buffer.from(`client ${n}, document ${i}\n`), randomBytes(2000 + 997 * i)]);
        const id = await upload(api, user, org, workspace.id, bytes);
        acknowledged.push({ id, bytes, at: performance.now() });
        if (acknowledged.length >= 3) firstAcks();
      }
    };
    const clients = [1, 2, 3].map(client);
    await enough;

    const backupDir = join(scratch, 'backup');
    const restoredDir = join(scratch, 'restored');
    await mkdir(restoredDir);
    await writeFile(join(restoredDir, 'stray.txt'), 'not a data directory');
    const began = performance.now();
    // Meanwhile, restore refuses the directory the service uses, and a directory with anything in
    // it (a restore there starts before the backup has finished: it refuses the place, not the backup).
    const [backup, inUse, notEmpty] = await Promise.all([
      command(['backup', backupDir], { DATA_DIR: dataDir }),
      command(['restore', backupDir], { DATA_DIR: dataDir }),
      command(['restore', backupDir], { DATA_DIR: restoredDir }),
    ]);
    writing = false;
    await Promise.all(clients);
    expect(backup.code, backup.stderr).toBe(0);
    expect(backup.stdout).toContain('by the running service');
    const before = acknowledged.filter((write) => write.at < began);
    expect(before.length).toBeGreaterThanOrEqual(3);
    expect(inUse.code).not.toBe(0);
    expect(inUse.stderr).toMatch(/in use by process/);
    expect(notEmpty.code).not.toBe(0);
    expect(notEmpty.stderr).toMatch(/not empty \(stray\.txt\)/);

    // Killed, the service leaves its lock behind: backup then opens the database itself (while the
    // restore runs). It holds every document, and each with its file.
    await api.service.stop();
    await rm(join(restoredDir, 'stray.txt'));
    const [restored, offline] = await Promise.all([command(['restore', backupDir], { DATA_DIR: restoredDir }), command(['backup', join(scratch, 'offline')], { DATA_DIR: dataDir })]);
    expect(restored.code, restored.stderr).toBe(0);
    expect(offline.code, offline.stderr).toBe(0);
    expect(offline.stdout).not.toContain('by the running service');
    const manifest = JSON.parse(await readFile(join(scratch, 'offline', 'manifest.json'), 'utf8')) as BackupManifest;
    expect(manifest.uploads).toMatchObject({ readyDocuments: acknowledged.length, missingReady: [] });

    const back = await startApi(restoredDir);
    apis.push(back);
    // Every document acknowledged before the backup began is there; one acknowledged during it may
    // be there or not, and whole if it is. Nothing else is.
    const listed: { id: string; status: string; size: number }[] = [];
    for (let cursor: string | null = ''; cursor !== null;) {
      const page = (await call(back, user, 'GET', `/workspaces/${workspace.id}/documents?organizationId=${org}&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)) as {
        items: typeof listed;
        nextCursor: string | null;
      };
      listed.push(...page.items);
      cursor = page.nextCursor;
    }
    const ready = listed.filter((each) => each.status === 'ready');
    for (const write of before) expect(ready.find((each) => each.id === write.id)).toMatchObject({ id: write.id, size: write.bytes.length });
    await Promise.all(
      ready.map(async (item) => {
        const write = acknowledged.find((each) => each.id === item.id);
        expect(write, `${item.id} was never acknowledged`).toBeDefined();
        expect((await download(back, user, item.id)).equals(write!.bytes)).toBe(true);
      }),
    );
  }, 120_000);

  it('backup with DATABASE_URL refuses and names what to use instead', async () => {
    const refused = await refusedWithUrl;
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/pg_dump/);
    expect(refused.stderr).toMatch(/point-in-time recovery/);
    expect(refused.stderr).toMatch(/versioning/);
    expect(await readdir(scratch)).not.toContain('never');
  });
});
