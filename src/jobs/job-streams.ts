/**
 * What the open jobs.stream connections of one service share: the event log's reader (event-hub.ts),
 * the five-streams-per-user cap (stream-leases.ts) and the watcher of revocations
 * (stream-revocations.ts). Built once per service at the composition root; each starts its work
 * (a reader, a refresh timer, a LISTEN) only with the first stream.
 */
import type { Database } from '../db/connection.ts';
import { newId } from '../ids.ts';
import type { Logger } from '../logger.ts';
import type { JobEventBus } from './event-bus.ts';
import { createEventHub, DEFAULT_POLL_MS, type EventHub } from './event-hub.ts';
import { leasedSlots, memorySlots, type StreamSlots } from './stream-leases.ts';
import { streamRevocations, type StreamRevocations } from './stream-revocations.ts';

export interface JobStreams {
  /** The bus the job lifecycle announces committed events on; the hub's reader listens to it. */
  events: JobEventBus;
  hub: EventHub;
  slots: StreamSlots;
  revocations: StreamRevocations;
}

export function jobStreams(options: { db: Database; logger: Logger; events: JobEventBus; pollMs?: number | undefined }): JobStreams {
  const { db, logger } = options;
  // On a database server other processes' events arrive by LISTEN, and the cap is kept in the
  // database for every instance; the embedded database has one process. Revocations arrive by
  // LISTEN on both (Database.listen).
  const server = db.kind === 'external';
  return {
    events: options.events,
    hub: createEventHub({ sql: db.sql, events: options.events, listen: server, pollMs: options.pollMs ?? DEFAULT_POLL_MS, logger }),
    slots: server ? leasedSlots({ sql: db.sql, logger, instanceId: newId('api') }) : memorySlots(),
    revocations: streamRevocations({ listen: db.listen, logger }),
  };
}
