/**
 * A commit is on the disk before it is acknowledged, on the embedded default (`node src/main.ts
 * api` without DATABASE_URL), watched from inside the service: fsync-probe.cts, preloaded into the
 * process and its database thread, logs each fsync and fdatasync and each write to a WAL file as it
 * returns. For a write over HTTP, the WAL page holding its row was written, then that WAL file was
 * synced, all before the answer arrived. Then a crash loop: the service killed (SIGKILL) while
 * clients write, restarted, several times; every acknowledged write is there afterwards.
 */
import { readdir, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/connection.ts';
import { embeddedPgDataPath } from '../../src/db/embedded.ts';
import { externalDatabaseUrl, migratedDataDir } from '../support/database.ts';
import { spawnService, type ServiceProcess } from '../support/processes.ts';
import { addMembership, createUser } from '../support/users.ts';

const probe = fileURLToPath(new URL('./fsync-probe.cts', import.meta.url));
/** Service processes started and killed in the crash loop. Each restart after a kill runs PostgreSQL's recovery. */
const KILLS = 3;
/** Writes acknowledged in each run before it is killed. */
const ACKNOWLEDGED_PER_RUN = 15;
const CLIENTS = 4;

let dataDir: string | undefined;
let service: ServiceProcess | undefined;

afterEach(async () => {
  await service?.stop();
  service = undefined;
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
  dataDir = undefined;
});

interface Tenant {
  organizationId: string;
  headers: Record<string, string>;
}

/** A migrated data directory holding a user who owns an organization. */
async function seededDataDir(): Promise<{ dir: string; tenant: Tenant }> {
  const dir = await migratedDataDir();
  dataDir = dir;
  const db = await openDatabase({ dataDir: dir });
  try {
    const user = await createUser(db);
    const organizationId = await addMembership(db, user, 'owner');
    return { dir, tenant: { organizationId, headers: user.headers } };
  } finally {
    await db.close();
  }
}

/** `api` on the embedded database in `dir`, without the job worker (its polling would write too). */
async function startApi(dir: string, env: NodeJS.ProcessEnv = {}): Promise<{ process: ServiceProcess; port: number }> {
  service = spawnService('api', { DATA_DIR: dir, WORKER: 'off', RATE_LIMIT_PER_MINUTE: '100000', ...env }, { withoutDatabaseUrl: true });
  const port = (await service.logged('listening')).port as number;
  return { process: service, port };
}

async function createWorkspace(port: number, tenant: Tenant, slug: string): Promise<{ status: number; id?: string }> {
  const response = await fetch(`http://127.0.0.1:${port}/api/v1/workspaces`, {
    method: 'POST',
    headers: { ...tenant.headers, 'content-type': 'application/json' },
    body: JSON.stringify({ organizationId: tenant.organizationId, name: slug, slug }),
  });
  const body = (await response.json()) as { id?: string };
  return { status: response.status, ...(body.id ? { id: body.id } : {}) };
}

/** Where `bytes` first occurs in a WAL segment of the data directory: the file and the offset. */
async function findInWal(dir: string, bytes: Buffer): Promise<{ path: string; offset: number } | undefined> {
  const walDir = join(embeddedPgDataPath(dir), 'pg_wal');
  for (const name of (await readdir(walDir)).filter((entry) => /^[0-9A-F]{24}$/.test(entry))) {
    const offset = (await readFile(join(walDir, name))).indexOf(bytes);
    if (offset >= 0) return { path: join(walDir, name), offset };
  }
  return undefined;
}

// Linux: the probe reads paths from /proc. Under `make test-pg` it would only run again unchanged.
describe.skipIf(process.platform !== 'linux' || externalDatabaseUrl !== undefined)('the embedded database makes a commit durable before the answer', () => {
  it('writes the WAL page holding the row, then syncs that WAL file, before the HTTP answer', { timeout: 120_000 }, async () => {
    const { dir, tenant } = await seededDataDir();
    const log = join(dir, 'fsync-probe.log');
    const { port } = await startApi(dir, { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require=${probe}`.trim(), FSYNC_PROBE_LOG: log });

    let checked = 0;
    for (let attempt = 0; attempt < 3; attempt++) {
      const name = `d-${crypto.randomUUID()}`;
      const before = (await stat(log)).size;
      const answer = await createWorkspace(port, tenant, name);
      // What the log holds now was done before the answer arrived.
      const lines = (await readFile(log)).subarray(before).toString().trim().split('\n');
      expect(answer.status).toBe(200);
      // The row's bytes in the WAL (a record that straddles a page header splits them: try another write).
      const found = await findInWal(dir, Buffer.from(name));
      if (!found) continue;
      const written = lines.findIndex((line) => {
        const [op, path, position, bytes] = line.split(' ');
        return op === 'write' && path === found.path && Number(position) <= found.offset && found.offset < Number(position) + Number(bytes);
      });
      expect(written, `no write of ${found.path} at ${found.offset} before the answer:\n${lines.join('\n')}`).toBeGreaterThanOrEqual(0);
      const synced = lines.slice(written + 1).some((line) => line === `fdatasync ${found.path}` || line === `fsync ${found.path}`);
      expect(synced, `${found.path} written but not synced before the answer:\n${lines.join('\n')}`).toBe(true);
      checked++;
    }
    expect(checked).toBeGreaterThan(0);
  });

  it(`keeps every acknowledged write across ${KILLS} kills (SIGKILL) while ${CLIENTS} clients write`, { timeout: 180_000 }, async () => {
    const { dir, tenant } = await seededDataDir();
    const acknowledged: string[] = [];
    const refused: number[] = [];
    for (let run = 0; run < KILLS; run++) {
      const { process, port } = await startApi(dir);
      const target = acknowledged.length + ACKNOWLEDGED_PER_RUN;
      let reached!: () => void;
      const enough = new Promise<void>((resolve) => (reached = resolve));
      // Each client writes until the service is gone; only a 200 with an id counts as acknowledged.
      const client = async (c: number) => {
        for (let i = 0; ; i++) {
          let answer: Awaited<ReturnType<typeof createWorkspace>>;
          try {
            answer = await createWorkspace(port, tenant, `c${run}-${c}-${i}`);
          } catch {
            return; // the connection died with the process: not acknowledged
          }
          if (answer.status !== 200 || !answer.id) return void refused.push(answer.status);
          acknowledged.push(answer.id);
          if (acknowledged.length >= target) reached();
        }
      };
      const clients = Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)));
      await Promise.race([enough, clients]);
      process.child.kill('SIGKILL');
      await process.exited;
      await clients;
      service = undefined;
      expect(refused).toEqual([]);
    }
    expect(acknowledged.length).toBeGreaterThanOrEqual(KILLS * ACKNOWLEDGED_PER_RUN);

    // Opened as the next start would (crash recovery first), then every acknowledged id looked up.
    const db = await openDatabase({ dataDir: dir });
    try {
      const rows = await db.sql<{ id: string }[]>`select id from workspaces where id = any(${acknowledged})`;
      const present = new Set(rows.map((row) => row.id));
      expect(acknowledged.filter((id) => !present.has(id))).toEqual([]);
    } finally {
      await db.close();
    }
  });
});
