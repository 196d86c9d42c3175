// `serve` on a database server runs the job worker as a child process (WORKER=process, the default
// with DATABASE_URL): jobs run there, off the API's event loop; a worker that dies is started
// again and the jobs go on; SIGTERM stops both, and the command exits 0. Needs a real server
// (`make test-pg`): the embedded database serves one connection, which the API holds.
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createClient } from '../../clients/typescript/src/index.ts';
import type { Database } from '../../src/db/connection.ts';
import { createTestDatabase, databaseUrlOf, externalDatabaseUrl } from '../support/database.ts';
import { alive, serveProcess, type ServedProcess } from '../support/serve-process.ts';
import { addMembership, createUser } from '../support/users.ts';

let dataDir: string;
let db: Database;
let served: ServedProcess;

describe.skipIf(!externalDatabaseUrl)('serve with its job worker in a process of its own', () => {
  beforeAll(async () => {
    dataDir = await mkdtemp(join(inject('testScratchRoot'), 'workspace-api-test-'));
    db = await createTestDatabase();
    served = await serveProcess({ DATA_DIR: dataDir, DATABASE_URL: databaseUrlOf(db)!, AI_API_KEY: '', WORKER_CONCURRENCY: '1' });
  }, 90_000);

  afterAll(async () => {
    await served?.kill();
    await db?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  async function runJob(text: string): Promise<string> {
    const user = await createUser(db);
    const org = await addMembership(db, user, 'owner');
    const client = createClient({ baseUrl: `http://127.0.0.1:${served.port}`, token: user.token });
    const job = await client.jobs.create({ organizationId: org, kind: 'text.embed', input: { texts: [text] } });
    for (let i = 0; i < 600; i++) {
      const current = await client.jobs.get({ id: job.id });
      if (current.status !== 'queued' && current.status !== 'running') return current.status;
      await delay(50);
    }
    throw new Error(`job ${job.id} never finished`);
  }

  it("runs jobs in the worker process, not the API's", { timeout: 60_000 }, async () => {
    expect((await served.logged('listening')).worker).toBe('process');
    const worker = await served.logged('job worker process started');
    expect(worker.pid).not.toBe(served.child.pid);
    expect(await runJob('first')).toBe('succeeded');
    // The job's log line comes from the worker's process, not the API's.
    const ran = await served.logged('job succeeded');
    expect(ran.pid).toBe(worker.pid);
  });

  it('starts the worker again when it dies; jobs go on', { timeout: 60_000 }, async () => {
    const first = await served.logged('job worker process started');
    process.kill(first.pid as number, 'SIGKILL');
    await served.logged('the job worker exited; starting it again');
    const second = await served.logged('job worker process started', 2);
    expect(second.pid).not.toBe(first.pid);
    expect(await runJob('after the restart')).toBe('succeeded');
  });

  it('stops the worker with the API on SIGTERM, exiting 0', { timeout: 60_000 }, async () => {
    const current = await served.logged('job worker process started', 2);
    served.child.kill('SIGTERM');
    const [code] = await served.exited;
    expect(code).toBe(0);
    for (let i = 0; alive(current.pid as number) && i < 200; i++) await delay(50);
    expect(alive(current.pid as number)).toBe(false);
  });
});
