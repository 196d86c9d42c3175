/**
 * What the jobs.stream suites share: a server with the real stream handler and short timing, job
 * rows whose events are appended the way job writers append them, and a reader of server-sent
 * events that hands back each frame (retry line, comment, event) as it arrives.
 */
import { newId } from '../../src/ids.ts';
import type { Database } from '../../src/db/connection.ts';
import { appendJobEvent, announceJobEvents } from '../../src/jobs/events.ts';
import { JOB_COLUMNS, type JobRow } from '../../src/jobs/store.ts';
import { jobStreamProcedures } from '../../src/jobs/stream.ts';
import { startTestServer, type TestServer, type TestServerOptions } from '../support/server.ts';

/** Short enough for tests to see each timer fire; the suites never assert on durations. */
export const FAST = { heartbeatMs: 100, recheckMs: 150, lifetimeMs: 60_000, pollMs: 50 };

export function startStreamServer(options: TestServerOptions & { timing?: Partial<typeof FAST> } = {}): Promise<TestServer> {
  return startTestServer({
    ...options,
    env: { RATE_LIMIT_PER_MINUTE: '100000', ...options.env },
    overrides: { streams: jobStreamProcedures, streamTiming: { ...FAST, ...options.timing }, ...options.overrides },
  });
}

export async function addWorkspace(db: Database, organizationId: string): Promise<string> {
  const id = newId('ws');
  await db.sql`insert into workspaces (id, organization_id, name, slug) values (${id}, ${organizationId}, ${'Space ' + id}, ${id.replace('_', '-')})`;
  return id;
}

/**
 * Inserts a job (or moves one to `status`) and appends its event in the same transaction, as job
 * writers do. `announce` wakes this process's streams at once; without it they find the event by
 * polling (or LISTEN), as they would a worker's in another process.
 */
export async function writeJob(
  db: Database,
  job: { organizationId: string; workspaceId?: string | null; id?: string; status?: JobRow['status'] },
  options: { announce?: boolean } = {},
): Promise<{ id: string; eventId: string }> {
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
  if (options.announce ?? true) announceJobEvents();
  return { id, eventId };
}

export type Frame =
  | { kind: 'retry'; value: number }
  | { kind: 'comment'; text: string }
  | { kind: 'event'; event: string; id: string | undefined; data: any };

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
