/**
 * What the jobs.stream suites share: a server with the real stream handler and short timing, job
 * rows whose events are appended the way job writers append them, and a reader of server-sent
 * events that hands back each frame (retry line, comment, event) as it arrives.
 */
import { newId } from '../../src/ids.ts';
import type { Database } from '../../src/db/connection.ts';
import { appendJobEvent } from '../../src/jobs/events-store.ts';
import { JOB_COLUMNS, type JobRow } from '../../src/jobs/store.ts';
import { jobStreamProcedures } from '../../src/jobs/stream.ts';
import { createTestDatabase, openSecondClient } from '../support/database.ts';
import { startTestServer, type TestServer, type TestServerOptions } from '../support/server.ts';
import type { TestUser } from '../support/users.ts';

/** Short enough for tests to see each timer fire; the suites never assert on durations. */
export const FAST = { heartbeatMs: 100, recheckMs: 150, lifetimeMs: 60_000, pollMs: 50 };

export type StreamServerOptions = TestServerOptions & { timing?: Partial<typeof FAST> };

export function startStreamServer(options: StreamServerOptions = {}): Promise<TestServer> {
  return startTestServer({
    ...options,
    env: { RATE_LIMIT_PER_MINUTE: '100000', ...options.env },
    overrides: { streams: jobStreamProcedures, streamTiming: { ...FAST, ...options.timing }, ...options.overrides },
  });
}

/** A server with FAST timing, and one whose streams end after 300 ms (`end expired`). */
export async function startStreamServers(): Promise<{ server: TestServer; shortLived: TestServer }> {
  const server = await startStreamServer();
  try {
    return { server, shortLived: await startStreamServer({ timing: { lifetimeMs: 300 } }) };
  } catch (error) {
    await server.close();
    throw error;
  }
}

/**
 * Two API instances on one new database, both started with `options`: `a` on its client, `b` on a
 * second client of it (on an external database, a pool of its own). Close them with closeAll(…, a, b, secondDb, db).
 */
export async function startTwoInstances(options: StreamServerOptions = {}): Promise<{ db: Database; secondDb: Database; a: TestServer; b: TestServer }> {
  const db = await createTestDatabase();
  const opened: { close(): Promise<void> }[] = [db];
  try {
    const secondDb = await openSecondClient(db);
    opened.unshift(secondDb);
    const a = await startStreamServer({ ...options, db });
    opened.unshift(a);
    const b = await startStreamServer({ ...options, db: secondDb });
    return { db, secondDb, a, b };
  } catch (error) {
    for (const resource of opened) await resource.close();
    throw error;
  }
}

/** Closes every reader, then each of `resources` in the order given (one never started is undefined). */
export async function closeAll(readers: EventReader[], ...resources: ({ close(): Promise<void> | void } | undefined)[]): Promise<void> {
  for (const reader of readers) reader.close();
  for (const resource of resources) await resource?.close();
}

/** Opens `organizationId`'s jobs.stream on `server` as `user` (plus `query`); kept in `readers`, to be closed after the file. */
export async function openJobStream(readers: EventReader[], server: TestServer, user: Pick<TestUser, 'headers'>, organizationId: string, query = ''): Promise<EventReader> {
  const reader = await openEvents(`${server.origin}/api/v1/organizations/${organizationId}/jobs/stream${query}`, { headers: user.headers });
  readers.push(reader);
  return reader;
}

/** Opens streams with `open` until one is admitted (the server that held the slot frees it when it sees the close). */
export async function readyOnceFree(open: () => Promise<EventReader>): Promise<EventReader> {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const reader = await open();
    if ((await reader.nextEvent()).event === 'ready') return reader;
    reader.close();
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('no slot came free');
}

export async function addWorkspace(db: Database, organizationId: string): Promise<string> {
  const id = newId('ws');
  await db.sql`insert into workspaces (id, organization_id, name, slug) values (${id}, ${organizationId}, ${'Space ' + id}, ${id.replace('_', '-')})`;
  return id;
}

/**
 * Inserts a job (or moves one to `status`) and appends its event in the same transaction, as job
 * writers do. `announce` wakes the server's streams at once (given a server); without it they find the event by
 * polling (or LISTEN), as they would a worker's in another process.
 */
export async function writeJob(
  target: Database | TestServer,
  job: { organizationId: string; workspaceId?: string | null; id?: string; status?: JobRow['status'] },
  options: { announce?: boolean } = {},
): Promise<{ id: string; eventId: string }> {
  const db = 'services' in target ? target.db : target;
  const id = job.id ?? newId('job');
  const status = job.status ?? 'queued';
  const eventId = await db.sql.begin(async (tx) => {
    const [row] = await tx<JobRow[]>`
      insert into jobs (id, organization_id, workspace_id, kind, status, input, credits)
      values (${id}, ${job.organizationId}, ${job.workspaceId ?? null}, 'text.embed', ${status}, ${tx.json({ texts: ['hello'] })}, 1)
      on conflict (id) do update set status = excluded.status, updated_at = now(),
        finished_at = case when excluded.status in ('succeeded', 'failed', 'canceled') then now() end
      returning ${tx.unsafe(JOB_COLUMNS)}`;
    await appendJobEvent(tx, row!);
    const [event] = await tx<{ id: string }[]>`select max(id)::text as id from job_events`;
    return event!.id;
  });
  // Only a server's own bus wakes its streams at once (a bare database has no bus to announce on).
  if ((options.announce ?? true) && 'services' in target) target.services.streams.events.announce();
  return { id, eventId };
}

export type Frame = { kind: 'retry'; value: number } | { kind: 'comment'; text: string } | { kind: 'event'; event: string; id: string | undefined; data: any };

export interface EventReader {
  response: Response;
  /** The next frame; rejects when the stream ends first or nothing comes for 15 s. */
  next(): Promise<Frame>;
  /** The next event (skipping retry lines and comments). */
  nextEvent(): Promise<Extract<Frame, { kind: 'event' }>>;
  /** Resolves once the server has closed the stream (frames still unread are dropped). */
  closed(): Promise<void>;
  close(): void;
}

/** Opens an event stream with `fetch` and parses it frame by frame (WHATWG HTML, server-sent events). */
export async function openEvents(url: string, init: RequestInit = {}): Promise<EventReader> {
  const controller = new AbortController();
  const response = await fetch(url, { ...init, signal: controller.signal });
  const frames: Frame[] = [];
  let waiting: (() => void) | undefined;
  let ended = false;
  const pump = (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let split: number;
        while ((split = buffer.indexOf('\n\n')) >= 0) {
          frames.push(parseBlock(buffer.slice(0, split)));
          buffer = buffer.slice(split + 2);
        }
        waiting?.();
      }
    } catch {
      // Aborted by close(), or cut by the server: the stream has ended either way.
    } finally {
      ended = true;
      waiting?.();
    }
  })();
  const next = async (): Promise<Frame> => {
    const deadline = Date.now() + 15_000;
    while (frames.length === 0) {
      if (ended) throw new Error('the stream ended');
      if (Date.now() > deadline) throw new Error('no frame within 15 s');
      await new Promise<void>((resolve) => {
        waiting = resolve;
        setTimeout(resolve, 1_000);
      });
    }
    return frames.shift()!;
  };
  return {
    response,
    next,
    async nextEvent() {
      for (;;) {
        const frame = await next();
        if (frame.kind === 'event') return frame;
      }
    },
    closed: () => pump,
    close: () => controller.abort(),
  };
}

function parseBlock(block: string): Frame {
  if (block.startsWith(':')) return { kind: 'comment', text: block.slice(1).trim() };
  const fields = new Map<string, string>();
  for (const line of block.split('\n')) {
    const colon = line.indexOf(':');
    fields.set(line.slice(0, colon), line.slice(colon + 1).replace(/^ /, ''));
  }
  if (fields.has('retry')) return { kind: 'retry', value: Number(fields.get('retry')) };
  return { kind: 'event', event: fields.get('event')!, id: fields.get('id'), data: JSON.parse(fields.get('data')!) };
}

/** Reads events until `count` job events have arrived; answers them. */
export async function jobEvents(reader: EventReader, count: number): Promise<Extract<Frame, { kind: 'event' }>[]> {
  const events: Extract<Frame, { kind: 'event' }>[] = [];
  while (events.length < count) {
    const event = await reader.nextEvent();
    if (event.event !== 'job') throw new Error(`expected a job event, got ${event.event} ${JSON.stringify(event.data)}`);
    events.push(event);
  }
  return events;
}
