/**
 * This process's signal that job events were committed (events-store.ts): the job lifecycle
 * announces after each commit, and the stream readers of the same service (event-hub.ts) read at
 * once instead of at their next poll. One bus per service, made at the composition root, so apps
 * built side by side (tests) do not wake each other. Other processes learn of events through
 * `pg_notify('job_events')` (a database server) or by polling.
 */
import { EventEmitter } from 'node:events';

export interface JobEventBus {
  /** Wakes this service's readers; call after a transaction that appended events has committed. */
  announce(): void;
  /** Calls `listener` on each announcement; answers the unsubscribe function. */
  subscribe(listener: () => void): () => void;
}

export function jobEventBus(): JobEventBus {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  return {
    announce: () => void emitter.emit('events'),
    subscribe(listener) {
      emitter.on('events', listener);
      return () => void emitter.off('events', listener);
    },
  };
}
