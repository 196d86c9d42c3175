/**
 * Scale-out on one real PostgreSQL (`make test-pg`; skipped on the embedded database, which one
 * process owns): `api` processes without a worker (two, or TEST_API_INSTANCES) and one `worker`
 * process (or TEST_WORKERS). A stream on any API sees every event of jobs created through any of
 * them, in the same order, and a client that moves from one API to another with Last-Event-Id
 * misses nothing and repeats nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { loadConfig } from '../../src/config.ts';
import type { Database } from '../../src/db/connection.ts';
import { startAiService } from '../../src/ai-service/server.ts';
import { createTestDatabase, databaseUrlOf, externalDatabaseUrl } from '../support/database.ts';
import { spawnService, type ServiceProcess } from '../support/processes.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';
import { apiInstances, workerProcesses } from './support.ts';

interface StreamEvent {
  event: string;
  id?: string;
  data: any;
}

/** Reads a server-sent event stream into `events` until aborted. */
function openStream(url: string, headers: Record<string, string>) {
  const events: StreamEvent[] = [];
  const controller = new AbortController();
  const done = (async () => {
    const response = await fetch(url, { headers: { ...headers, accept: 'text/event-stream' }, signal: controller.signal });
    expect(response.status).toBe(200);
    let buffer = '';
    try {
      for await (const chunk of response.body!.pipeThrough(new TextDecoderStream())) {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const field = (name: string) =>
            block
              .split('\n')
              .find((line) => line.startsWith(`${name}:`))
              ?.slice(name.length + 1)
              .trim();
          const data = field('data');
          if (data !== undefined) events.push({ event: field('event') ?? 'message', ...(field('id') ? { id: field('id')! } : {}), data: JSON.parse(data) });
        }
      }
    } catch (error) {
      if (!controller.signal.aborted) throw error;
    }
  })();
  return {
    events,
    close: () => {
      controller.abort();
      return done.catch(() => undefined);
    },
  };
}

async function until(check: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe.skipIf(!externalDatabaseUrl)('API processes and worker processes on one database', () => {
  let db: Database;
  let ai: Awaited<ReturnType<typeof startAiService>>;
  const processes: ServiceProcess[] = [];
  const origins: string[] = [];
  let user: TestUser;
  let org: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    ai = await startAiService({ settings: loadConfig({}).ai, host: '127.0.0.1', port: 0, logger: createLogger('silent') });
    const env = { DATABASE_URL: databaseUrlOf(db)!, AI_URL: ai.url, SECRET: 'processes-secret-processes-secret!!', RATE_LIMIT_PER_MINUTE: '100000' };
    const apis = Array.from({ length: apiInstances(2) }, () => spawnService('api', { ...env, WORKER: 'off' }));
    const workers = Array.from({ length: workerProcesses(1) }, () => spawnService('worker', env));
    processes.push(...apis, ...workers);
    for (const api of apis) origins.push(`http://127.0.0.1:${Number((await api.logged('listening')).port)}`);
    for (const worker of workers) await worker.logged('job worker started');
    user = await createUser(db);
    org = await addMembership(db, user, 'owner');
  }, 60_000);
  afterAll(async () => {
    for (const process of processes) await process.stop();
    await ai?.close();
    await db?.close();
  });

  const create = async (origin: string, text: string) => {
    const response = await fetch(`${origin}/api/v1/jobs`, {
      method: 'POST',
      headers: { ...user.headers, 'content-type': 'application/json' },
      body: JSON.stringify({ organizationId: org, kind: 'text.embed', input: { texts: [text] } }),
    });
    expect(response.status).toBe(200);
    return ((await response.json()) as { id: string }).id;
  };
  const streamUrl = (origin: string) => `${origin}/api/v1/organizations/${org}/jobs/stream`;
  const succeeded = (events: StreamEvent[], ids: string[]) => ids.every((id) => events.some((e) => e.event === 'job' && e.data.id === id && e.data.status === 'succeeded'));

  it('each stream sees every job event in the same increasing order; resuming on another API repeats and loses nothing', async () => {
    // One stream on each API: A is the first, B the second.
    const streams = origins.map((origin) => openStream(streamUrl(origin), user.headers));
    const [a, b] = [streams[0]!, streams[1]!];
    await until(() => streams.every((stream) => stream.events.some((e) => e.event === 'ready')), 'every stream ready');

    const ids: string[] = [];
    for (let i = 0; i < 3 * origins.length; i++) ids.push(await create(origins[i % origins.length]!, `text ${i}`));
    await until(() => streams.every((stream) => succeeded(stream.events, ids)), 'every job succeeded on every stream');

    const jobEvents = (events: StreamEvent[]) => events.filter((e) => e.event === 'job');
    const seenA = jobEvents(a.events);
    for (const stream of streams.slice(1)) expect(seenA.map((e) => e.id)).toEqual(jobEvents(stream.events).map((e) => e.id));
    for (const stream of streams.slice(2)) await stream.close();
    const numbers = seenA.map((e) => Number(e.id));
    expect(numbers).toEqual([...numbers].sort((x, y) => x - y));
    expect(new Set(numbers).size).toBe(numbers.length);
    for (const id of ids) expect(seenA.filter((e) => e.data.id === id).map((e) => e.data.status)).toEqual(['queued', 'running', 'succeeded']);

    // Leave API A after its third job event, and resume on API B from there.
    await a.close();
    const resumeFrom = seenA[2]!.id!;
    const more: string[] = [];
    for (const [i, origin] of origins.entries()) more.push(await create(origin, `after ${i}`));
    const resumed = openStream(streamUrl(origins[1]!), { ...user.headers, 'last-event-id': resumeFrom });
    await until(() => succeeded(resumed.events, more), 'the later jobs on the resumed stream');
    await resumed.close();
    await until(() => succeeded(b.events, more), 'the later jobs on stream B');
    await b.close();
    const expected = jobEvents(b.events)
      .filter((e) => Number(e.id) > Number(resumeFrom))
      .map((e) => e.id);
    expect(jobEvents(resumed.events).map((e) => e.id)).toEqual(expected);
  }, 90_000);
});
