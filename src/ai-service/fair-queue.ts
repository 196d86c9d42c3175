/**
 * Fair, bounded queues for the AI service's scarce resources (docs/ai-service.md "Queues"): the
 * extraction threads, the OCR engine and the embedding model's batches. Without them one
 * organization's backlog delays everyone else's next document by the whole backlog (issue 23).
 *
 * - FairLine: waiting items kept per group (an organization), served round-robin across groups,
 *   the group served least recently first, and in arrival order within a group. Turns go by
 *   round: a group with nothing waiting or running is dropped, but when it was served after a
 *   group still in the line its turn is remembered, and coming back it goes behind that group. A
 *   group sending one job after another is idle for a moment after each; counted as never served
 *   on its return, two such groups would take turns ahead of one that waits (issue 40). A turn is
 *   remembered only while a group in the line was served before it, so what is kept stays about
 *   as small as the work in the line. An item taken and put back (the embedder's request with
 *   texts left) is still pushed before its take is finished, so its group is never idle between.
 * - FairQueue: a FairLine in front of `capacity` tasks running at once, with a bound on waiting
 *   work (in total and per group) past which a request is refused at once with 503 and
 *   Retry-After, and with waiting work dropped when its caller's signal aborts.
 *
 * Requests that name no organization form one group of their own (NO_ORGANIZATION).
 *
 * A FairQueue's wait is the span `ai.queue.wait` under the request's span (spans.ts); the
 * embedder's lines have theirs in embedder.ts.
 */
import { HttpError } from './http-exchange.ts';
import { endQueueWait, startQueueWait } from './spans.ts';

/** The group of requests that carry no organization (the API's search queries, other clients). */
export const NO_ORGANIZATION = '';

export interface FairLine<T> {
  push(group: string, item: T): void;
  /**
   * The oldest item of the group served least recently (or of `group`), which now counts as just
   * served. Undefined when nothing (of that group) waits.
   */
  take(group?: string): T | undefined;
  /** The groups with items waiting, in the order take() serves them: the one served least recently first. */
  turns(): string[];
  /** Removes an item still waiting; false when it is not waiting. */
  remove(item: T): boolean;
  /** Items waiting, in total or of one group. */
  size(group?: string): number;
  /** Counts work of the group that started without waiting as served now, like take() would. */
  started(group: string): void;
  /** Marks one of the group's taken or started items as finished, so an idle group is dropped (its turn kept while it matters). */
  finished(group: string): void;
  clear(): T[];
}

interface Group<T> {
  items: T[];
  /** When the group was last served (a counter, not a clock); -1 for never. */
  served: number;
  /** Items taken and not yet finished. */
  active: number;
}

export function createFairLine<T>(groupOf: (item: T) => string): FairLine<T> {
  // Map keeps insertion order: among groups never served, the first to arrive goes first.
  const groups = new Map<string, Group<T>>();
  /** When groups dropped while idle were last served, kept while a group in the line was served before. */
  const lastServed = new Map<string, number>();
  let total = 0;
  let turn = 0;

  const forgetIfIdle = (key: string, group: Group<T>) => {
    if (group.items.length > 0 || group.active > 0) return;
    groups.delete(key);
    if (group.served >= 0) lastServed.set(key, group.served);
    // A remembered turn matters only against a group in the line (waiting or running) that was
    // served before it: against the others, never served or served since, it orders the same as
    // counting as never served.
    let oldest = Infinity;
    for (const other of groups.values()) if (other.served >= 0) oldest = Math.min(oldest, other.served);
    for (const [other, served] of lastServed) if (served <= oldest) lastServed.delete(other);
  };

  /** The group of `key`, created with its remembered turn (or as never served) when absent. */
  const groupNamed = (key: string): Group<T> => {
    let group = groups.get(key);
    if (!group) {
      groups.set(key, (group = { items: [], served: lastServed.get(key) ?? -1, active: 0 }));
      lastServed.delete(key);
    }
    return group;
  };

  return {
    push(key, item) {
      groupNamed(key).items.push(item);
      total += 1;
    },
    take(key) {
      let chosen: Group<T> | undefined;
      if (key !== undefined) chosen = groups.get(key);
      else {
        for (const group of groups.values()) {
          if (group.items.length > 0 && (!chosen || group.served < chosen.served)) chosen = group;
        }
      }
      if (!chosen || chosen.items.length === 0) return undefined;
      chosen.served = turn++;
      chosen.active += 1;
      total -= 1;
      return chosen.items.shift();
    },
    turns() {
      // A stable sort: groups never served (-1) keep their order of arrival, as in take().
      return [...groups.entries()]
        .filter(([, group]) => group.items.length > 0)
        .sort(([, a], [, b]) => a.served - b.served)
        .map(([key]) => key);
    },
    remove(item) {
      const key = groupOf(item);
      const group = groups.get(key);
      const at = group ? group.items.indexOf(item) : -1;
      if (!group || at < 0) return false;
      group.items.splice(at, 1);
      total -= 1;
      forgetIfIdle(key, group);
      return true;
    },
    size(key) {
      return key === undefined ? total : (groups.get(key)?.items.length ?? 0);
    },
    started(key) {
      const group = groupNamed(key);
      group.served = turn++;
      group.active += 1;
    },
    finished(key) {
      const group = groups.get(key);
      if (!group) return;
      group.active = Math.max(0, group.active - 1);
      forgetIfIdle(key, group);
    },
    clear() {
      const items = [...groups.values()].flatMap((group) => group.items);
      groups.clear();
      lastServed.clear();
      total = 0;
      return items;
    },
  };
}

export interface QueueBounds {
  /** Tasks running at once. */
  capacity: number;
  /** Waiting tasks of all groups together; one more is refused with 503. */
  maxWaiting: number;
  /** Waiting tasks of one group; one more of that group is refused with 503. */
  maxWaitingPerGroup: number;
  /** The Retry-After of that 503, in seconds: about how long one running task takes to make room. */
  retryAfterSeconds: number;
}

export interface QueueStats {
  running: number;
  waiting: number;
  /** Tasks whose caller went away (waiting ones dropped, running ones told through their signal). */
  dropped: number;
  /** Requests refused with 503 because the queue was full. */
  refused: number;
}

export interface FairQueue {
  /**
   * Runs `task` once a slot is free and its group's turn has come, or refuses at once (503) when
   * the queue is full. When `signal` aborts while waiting the task never runs and the promise
   * rejects with the signal's reason; while running, the task gets the signal and should stop.
   */
  run<T>(group: string, task: (signal: AbortSignal | undefined) => Promise<T>, signal?: AbortSignal): Promise<T>;
  stats(): QueueStats;
  /** Rejects every waiting task with `reason` (the service is closing). */
  cancelWaiting(reason: unknown): void;
}

interface Waiter {
  group: string;
  go(): void;
  cancel(reason: unknown): void;
}

/** What `what` names in the 503's message, e.g. "documents", "images". */
export function createFairQueue(bounds: QueueBounds, what: string): FairQueue {
  const line = createFairLine<Waiter>((waiter) => waiter.group);
  let running = 0;
  let dropped = 0;
  let refused = 0;

  const full = () => {
    refused += 1;
    return new HttpError(503, `Too many ${what} are waiting to be read; try again in ${bounds.retryAfterSeconds} s.`, {
      headers: { 'retry-after': String(bounds.retryAfterSeconds) },
    });
  };

  const next = () => {
    while (running < bounds.capacity) {
      const waiter = line.take();
      if (!waiter) return;
      running += 1;
      waiter.go();
    }
  };

  return {
    async run(group, task, signal) {
      signal?.throwIfAborted();
      // A child of the request's span: zero-long when the task starts at once (spans.ts).
      const wait = startQueueWait(what, line.size(), running);
      if (running < bounds.capacity && line.size() === 0) {
        running += 1;
        // Counted as served, so a group that starts at once takes its turn like one that waited.
        line.started(group);
        endQueueWait(wait, 'started');
      } else {
        if (line.size() >= bounds.maxWaiting || line.size(group) >= bounds.maxWaitingPerGroup) {
          endQueueWait(wait, 'refused');
          throw full();
        }
        await new Promise<void>((go, cancel) => {
          const waiter: Waiter = { group, go, cancel };
          const gone = () => {
            if (!line.remove(waiter)) return;
            dropped += 1;
            endQueueWait(wait, 'dropped');
            cancel(signal!.reason);
          };
          signal?.addEventListener('abort', gone, { once: true });
          // The listener must not outlive the wait: a long-lived signal would keep every waiter.
          waiter.go = () => {
            signal?.removeEventListener('abort', gone);
            endQueueWait(wait, 'started');
            go();
          };
          waiter.cancel = (reason) => {
            signal?.removeEventListener('abort', gone);
            endQueueWait(wait, 'cancelled');
            cancel(reason);
          };
          line.push(group, waiter);
        });
      }
      try {
        return await task(signal);
      } finally {
        if (signal?.aborted) dropped += 1;
        running -= 1;
        line.finished(group);
        next();
      }
    },
    stats() {
      return { running, waiting: line.size(), dropped, refused };
    },
    cancelWaiting(reason) {
      for (const waiter of line.clear()) waiter.cancel(reason);
    },
  };
}
