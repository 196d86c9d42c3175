/**
 * One reader of the job event log per service, shared by every open jobs.stream: however many streams
 * are open, the process asks the database for new events with one query (`eventsAfter` over all
 * organizations, page after page while pages come back full) and hands each event to the streams
 * of its organization.
 *
 * The reader runs only while at least one stream is subscribed. It is woken by this process's
 * job lifecycle (its bus, event-bus.ts), by `LISTEN job_events` on an external database (a worker in
 * another process), and by a poll every `pollMs`, which alone guarantees progress: a lost
 * notification only delays an event. The embedded database takes a single connection, which
 * LISTEN would hold for good, so there the poll and the in-process wake do the work.
 */
import type { Sql } from '../db/connection.ts';
import type { Logger } from '../logger.ts';
import type { JobEventBus } from './event-bus.ts';
import { eventsAfter, JOB_EVENTS_CHANNEL, latestEventId, type JobEvent } from './events-store.ts';

const PAGE = 500;
export const DEFAULT_POLL_MS = 1_000;

export type JobEventListener = (event: JobEvent) => void;

export interface Subscription {
  /**
   * The id the reader had read up to when the listener joined: every later event of the
   * organization reaches the listener, in id order (earlier ones may reach it too).
   */
  position: string;
  unsubscribe(): void;
}

export interface EventHub {
  /** Starts the reader if it is idle; rejects (and leaves nothing subscribed) when it cannot start. */
  subscribe(organizationId: string, listener: JobEventListener): Promise<Subscription>;
}

export interface EventHubOptions {
  sql: Sql;
  /** This service's announcements of committed events. */
  events: JobEventBus;
  /** LISTEN for other processes' notifications (external database only). */
  listen: boolean;
  pollMs: number;
  logger: Logger;
}

interface Reader {
  /** Resolves once the reader knows where the log ends: its starting position. */
  ready: Promise<void>;
  position(): string;
  stop(): void;
}

/** The hub of one service; its reader starts with the first subscription. */
export function createEventHub(options: EventHubOptions): EventHub {
  const listeners = new Map<string, Set<JobEventListener>>();
  let subscribers = 0;
  let reader: Reader | null = null;

  const deliver = (event: JobEvent) => {
    for (const listener of listeners.get(event.organizationId) ?? []) {
      try {
        listener(event);
      } catch (error) {
        // A stream's own failure ends that stream (stream.ts); the others still get the event.
        options.logger.error({ err: error, eventId: event.id }, 'job event listener failed');
      }
    }
  };

  return {
    async subscribe(organizationId, listener) {
      let group = listeners.get(organizationId);
      if (!group) listeners.set(organizationId, (group = new Set()));
      group.add(listener);
      subscribers += 1;
      const current = (reader ??= startReader(options, deliver));
      let subscribed = true;
      const unsubscribe = () => {
        if (!subscribed) return;
        subscribed = false;
        group.delete(listener);
        if (group.size === 0) listeners.delete(organizationId);
        subscribers -= 1;
        if (subscribers === 0) {
          reader?.stop();
          reader = null;
        }
      };
      try {
        await current.ready;
      } catch (error) {
        // The next subscriber starts a fresh reader rather than inherit this failure.
        if (reader === current) {
          current.stop();
          reader = null;
        }
        unsubscribe();
        throw error;
      }
      return { position: current.position(), unsubscribe };
    },
  };
}

function startReader(options: EventHubOptions, deliver: (event: JobEvent) => void): Reader {
  const { sql, logger } = options;
  let stopped = false;
  let position: string | undefined;
  let reading = false;
  let again = false;
  const stops: (() => void)[] = [];

  const read = async () => {
    reading = true;
    try {
      do {
        again = false;
        let page: JobEvent[];
        do {
          page = await eventsAfter(sql, position!, { limit: PAGE });
          // A stopped reader's listeners are gone (or belong to its successor): drop the page.
          if (stopped) return;
          for (const event of page) {
            position = event.id;
            deliver(event);
          }
        } while (page.length === PAGE);
      } while (again);
    } catch (error) {
      if (!stopped) logger.warn({ err: error }, 'reading job events failed; the next poll tries again');
    } finally {
      reading = false;
    }
  };
  // Wakes that arrive during a read ask for one more pass, so no notification is lost.
  const wake = () => {
    if (stopped || position === undefined) return;
    if (reading) again = true;
    else void read();
  };

  const ready = (async () => {
    position = await latestEventId(sql);
    if (stopped) return;
    stops.push(options.events.subscribe(wake));
    const timer = setInterval(wake, options.pollMs);
    timer.unref();
    stops.push(() => clearInterval(timer));
    if (options.listen) {
      // `onlisten` runs again after postgres.js reconnects its listening connection: read what
      // was committed meanwhile.
      sql.listen(JOB_EVENTS_CHANNEL, wake, wake).then(
        (listening) => {
          const unlisten = () => void listening.unlisten().catch(() => undefined);
          if (stopped) unlisten();
          else stops.push(unlisten);
        },
        (error: unknown) => logger.warn({ err: error }, 'LISTEN job_events failed; streams rely on polling'),
      );
    }
  })();

  return {
    ready,
    position: () => position!,
    stop() {
      stopped = true;
      for (const stop of stops.splice(0)) stop();
    },
  };
}
