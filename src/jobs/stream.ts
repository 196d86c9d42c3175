/**
 * jobs.stream (decisions.md, "Job event stream"; docs/job-stream.md): the organization's job
 * events as server-sent events, on REST and RPC alike. The binding layer has authorized the caller
 * (job:read in `organizationId`) before this runs. On the wire, in order: `retry: 3000`, event
 * `ready`, then a `job` event per job change (replayed ones first when the client resumes with
 * Last-Event-Id), comments as heartbeats, and `end` just before the server closes the stream.
 * At most five streams per user across every API instance (stream-leases.ts); a revocation ends
 * the streams it concerns at once (stream-revocations.ts), the periodic re-check being the backstop.
 * Access is checked once more right after the revocation watch is registered, so a revocation
 * committed between the binding layer's check and the watch is not missed.
 */
import { procedures } from '../../generated/procedures.ts';
import type { Context, EventSink, StreamHandlers } from '../context.ts';
import type { Principal } from '../auth/principal.ts';
import { ApiError } from '../contract/errors.ts';
import { eventsAfter, latestEventId, type JobEvent } from './events-store.ts';
import { MAX_STREAMS_PER_USER } from './stream-leases.ts';
import type { RevocationWatch } from './stream-revocations.ts';

/** The reconnection delay sent first (decisions.md: `retry: 3000`). */
const RECONNECT_MS = 3_000;
const REPLAY_PAGE = 500;
/** The largest bigserial: a longer "id" is none of ours. */
const MAX_EVENT_ID = 2n ** 63n - 1n;

const defaultTiming = { heartbeatMs: 15_000, recheckMs: 30_000, lifetimeMs: 15 * 60_000 };

export const jobStreamProcedures: StreamHandlers = {
  'jobs.stream': async (input, ctx, sink) => {
    const principal = ctx.principal!;
    // The binding layer's access check ran in this organization, so tenant is set.
    const { organizationId } = ctx.tenant!;
    sink.retry(RECONNECT_MS);
    const release = await ctx.services.streams.slots.take(principal.userId);
    if (!release) {
      sink.send('error', tooManyStreams().toBody(procedures['jobs.stream'].errors));
      return;
    }
    try {
      const workspaceId = typeof input.workspaceId === 'string' ? input.workspaceId : undefined;
      await streamEvents({ ctx, sink, principal, organizationId, workspaceId });
    } finally {
      release();
    }
  },
};

interface StreamCall {
  ctx: Context<unknown>;
  sink: EventSink;
  principal: Principal;
  organizationId: string;
  /** A workspace of another organization simply matches no event of this one. */
  workspaceId: string | undefined;
}

async function streamEvents(call: StreamCall): Promise<void> {
  const { ctx, sink, organizationId, workspaceId } = call;
  const { services } = ctx;
  const timing = { ...defaultTiming, ...services.streamTiming };
  const expiresAt = new Date(services.now().getTime() + timing.lifetimeMs);

  // Events from the hub wait here until the replay before them is sent; `sent` is the last id
  // accounted for, so an event both the replay and the hub bring goes out once, in id order.
  let live = false;
  const pending: JobEvent[] = [];
  let sent = 0n;
  const forward = (event: JobEvent) => {
    const id = BigInt(event.id);
    if (id <= sent) return;
    sent = id;
    if (workspaceId === undefined || event.workspaceId === workspaceId) sink.send('job', event.job, event.id);
  };

  let fail: (error: unknown) => void = () => {};
  const closed = new Promise<void>((resolve, reject) => {
    fail = reject;
    if (sink.signal.aborted) resolve();
    else sink.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  // Runs from timers: a failure (an event outside the contract) fails the stream, not the process.
  const end = (reason: 'expired' | 'revoked') => {
    if (sink.signal.aborted) return;
    ctx.log.info({ reason, organizationId }, 'job stream ended');
    try {
      sink.send('end', { reason });
      sink.close();
    } catch (error) {
      fail(error);
    }
  };

  const subscription = await services.streams.hub.subscribe(organizationId, (event) => {
    if (!live) pending.push(event);
    else {
      try {
        forward(event);
      } catch (error) {
        fail(error);
      }
    }
  });
  const timers: NodeJS.Timeout[] = [];
  let watch: RevocationWatch | undefined;
  try {
    // Before `ready`: a revocation announced after the client saw `ready` reaches this stream.
    const recheck = rechecker(call, () => end('revoked'));
    const { principal } = call;
    watch = await services.streams.revocations.watch({ userId: principal.userId, sessionId: principal.sessionId, impersonatedBy: principal.impersonatedBy, organizationId }, recheck);
    // The binding layer checked access before the watch above was registered: a revocation
    // committed in between was announced while nobody here listened. One check now that every
    // later one is heard closes that gap (else only the periodic re-check would see it).
    if (!(await stillAuthorized(call))) {
      end('revoked');
      return;
    }
    const latest = BigInt(await latestEventId(services.db.sql));
    const resumeFrom = resumePoint(sink.lastEventId, latest);
    sent = resumeFrom ?? latest;
    // Sent once the start is fixed: whatever is committed after `ready` reaches the client.
    sink.send('ready', { expiresAt });

    timers.push(setTimeout(() => end('expired'), timing.lifetimeMs));
    timers.push(setInterval(() => sink.comment('keep-alive'), timing.heartbeatMs));
    timers.push(setInterval(recheck, timing.recheckMs));

    if (resumeFrom !== null) await replay(call, resumeFrom, BigInt(subscription.position), forward);
    live = true;
    for (const event of pending.splice(0)) forward(event);
    await closed;
  } finally {
    for (const timer of timers) clearTimeout(timer);
    watch?.unwatch();
    subscription.unsubscribe();
  }
}

/**
 * Where a Last-Event-Id resumes: after that id, or after the newest event when it names one not
 * yet written (a reset database must not hide the events to come). An id this service never
 * issues (not a decimal event id) resumes nothing: the stream starts live, like a fresh one.
 */
function resumePoint(lastEventId: string | undefined, latest: bigint): bigint | null {
  if (lastEventId === undefined || !/^\d{1,19}$/.test(lastEventId)) return null;
  const id = BigInt(lastEventId);
  if (id > MAX_EVENT_ID) return null;
  return id < latest ? id : latest;
}

/**
 * The organization's retained events after `from` up to the hub's position, read directly: the
 * hub brings every later one.
 */
async function replay(call: StreamCall, from: bigint, until: bigint, forward: (event: JobEvent) => void): Promise<void> {
  const { ctx, sink, organizationId } = call;
  let cursor = from;
  while (cursor < until && !sink.signal.aborted) {
    const page = await eventsAfter(ctx.services.db.sql, cursor.toString(), { organizationId, limit: REPLAY_PAGE });
    for (const event of page) {
      cursor = BigInt(event.id);
      if (cursor > until) return;
      forward(event);
    }
    if (page.length < REPLAY_PAGE) return;
  }
}

/**
 * Specification, Authentication item 9: the binding layer re-runs the call's authorization
 * (session valid, user not banned, the declared access still held), every `recheckMs` and at once
 * when a revocation may concern the stream. A check asked for while one runs runs again after it
 * (the running one may have read the state before the revocation). A check that fails to run (the
 * database is unreachable) keeps the stream; the next one decides.
 */
function rechecker(call: StreamCall, revoke: () => void): () => void {
  let checking = false;
  let again = false;
  const check = () => {
    if (call.sink.signal.aborted) return;
    if (checking) {
      again = true;
      return;
    }
    checking = true;
    call.sink
      .authorized()
      .then((authorized) => {
        if (!authorized) revoke();
      })
      .catch((error: unknown) => call.ctx.log.warn({ err: error }, 'job stream authorization re-check failed'))
      .finally(() => {
        checking = false;
        if (again) {
          again = false;
          check();
        }
      });
  };
  return check;
}

/** The binding layer's authorization, run again; a check that cannot run keeps the stream, as in rechecker. */
async function stillAuthorized(call: StreamCall): Promise<boolean> {
  try {
    return await call.sink.authorized();
  } catch (error) {
    call.ctx.log.warn({ err: error }, 'job stream authorization re-check failed');
    return true;
  }
}

function tooManyStreams(): ApiError<'TOO_MANY_REQUESTS'> {
  return new ApiError('TOO_MANY_REQUESTS', { message: `Too many concurrent streams (at most ${MAX_STREAMS_PER_USER}), close one and try again.` });
}
