/**
 * Revocations reach the open jobs.stream connections at once (src/auth/revocations.ts): one
 * watcher per service keeps the open streams with what their access hangs on, and on each revocation
 * asks the streams it may concern to re-check their authorization now. It hears of revocations
 * through `LISTEN access_revoked` (`Database.listen`): on a database server any instance's, on the
 * embedded database this process's own, delivered by PGlite to its one session once the revoking
 * transaction has committed. The stream's periodic re-check stays the backstop for a lost
 * notification.
 *
 * Like the event hub, the watcher listens only while at least one stream is open.
 */
import { AsyncResource } from 'node:async_hooks';
import type { Database } from '../db/connection.ts';
import type { Logger } from '../logger.ts';
import { ACCESS_REVOKED_CHANNEL, concerns, parseRevocation, type AccessHolder, type Revocation } from '../auth/revocations.ts';

export interface RevocationWatch {
  unwatch(): void;
}

export interface StreamRevocations {
  /**
   * Calls `recheck` whenever a revocation may concern `holder` (and after the listening connection
   * came back, when one may have been missed). Resolves once revocations are heard; a failure to
   * listen is logged, and the stream is left to its periodic re-check.
   */
  watch(holder: AccessHolder, recheck: () => void): Promise<RevocationWatch>;
}

interface Watched {
  holder: AccessHolder;
  recheck: () => void;
}

/** The watcher of one service; it listens only while a stream is watched. */
export function streamRevocations(options: { listen: Database['listen']; logger: Logger }): StreamRevocations {
  const watched = new Set<Watched>();
  // Resolves to the function that stops listening.
  let listening: Promise<() => void> | null = null;

  // null: anything may have been missed, every stream re-checks.
  const dispatch = (revocation: Revocation | null) => {
    for (const stream of watched) {
      if (revocation !== null && !concerns(revocation, stream.holder)) continue;
      try {
        stream.recheck();
      } catch (error) {
        options.logger.error({ err: error }, 'job stream re-check failed to start');
      }
    }
  };

  const startListening = (): Promise<() => void> => {
    let connects = 0;
    return options.listen(
      ACCESS_REVOKED_CHANNEL,
      (payload) => {
        const revocation = parseRevocation(payload);
        if (revocation) dispatch(revocation);
      },
      // Runs again after a server's listening connection came back.
      () => {
        connects += 1;
        if (connects > 1) dispatch(null);
      },
    );
  };

  return {
    async watch(holder, recheck) {
      // Re-checks run in the stream's own async context, not the one the notification arrives in
      // (the connection's, which may be a transaction's, where the guard refuses pool queries).
      const entry: Watched = { holder, recheck: AsyncResource.bind(recheck) };
      watched.add(entry);
      const current = (listening ??= startListening());
      try {
        await current;
      } catch (error) {
        // The next stream tries again; this one has its periodic re-check.
        if (listening === current) listening = null;
        options.logger.warn({ err: error }, 'LISTEN access_revoked failed; job streams rely on their periodic re-check');
      }
      let done = false;
      return {
        unwatch() {
          if (done) return;
          done = true;
          watched.delete(entry);
          if (watched.size > 0 || !listening) return;
          const stopping = listening;
          listening = null;
          stopping.then(
            (stop) => stop(),
            () => undefined,
          );
        },
      };
    },
  };
}
