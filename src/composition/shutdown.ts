/**
 * Stopping a process of the service, in one place: the stop signals (SIGTERM, SIGINT) and the
 * drain of an HTTP server (requests in flight finish, idle and event-stream connections close).
 * The commands (commands.ts) stop their parts in the reverse order of starting them after it.
 */
import { once } from 'node:events';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Logger } from '../logger.ts';
import type { Tracing } from '../telemetry/tracing.ts';

/** How long running requests (and jobs) get to finish after SIGTERM or SIGINT before they are cut. */
export const DRAIN_TIMEOUT_MS = 10_000;

/** How long the spans still buffered get to reach their receiver at exit. */
export const TRACING_STOP_TIMEOUT_MS = 5_000;

/**
 * The last step of a process's stop, after the service's own: the tracing SDK (when started)
 * exports the spans it still holds, among them those of the drain itself. Bounded: a receiver that
 * does not answer must not keep the process from exiting; what it misses is logged, not fatal.
 */
export async function stopTracing(tracing: Tracing | null, logger: Logger, timeoutMs = TRACING_STOP_TIMEOUT_MS): Promise<void> {
  if (!tracing) return;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  try {
    const outcome = await Promise.race([tracing.shutdown().then(() => 'stopped' as const), timeout]);
    if (outcome === 'timeout') logger.warn({ timeoutMs }, 'tracing: the last spans were not exported in time');
  } catch (error) {
    logger.warn({ error: error instanceof Error ? error.message : String(error) }, 'tracing: exporting the last spans failed');
  } finally {
    clearTimeout(timer);
  }
}

/**
 * SIGTERM or SIGINT asks for a graceful stop (`requested`); one during the start is acted on once
 * the start has finished. A second one during the drain skips the rest of it (`repeated`); a
 * second one during the start, or a third, exits at once.
 */
export function watchStopSignals(logger: Logger, signals: NodeJS.Signals[] = ['SIGTERM', 'SIGINT']): { requested: Promise<NodeJS.Signals>; repeated: Promise<void>; serving(): void; draining(): void } {
  let phase: 'starting' | 'serving' | 'draining' = 'starting';
  let count = 0;
  let request!: (signal: NodeJS.Signals) => void;
  let repeat!: () => void;
  const requested = new Promise<NodeJS.Signals>((resolve) => (request = resolve));
  const repeated = new Promise<void>((resolve) => (repeat = resolve));
  const handle = (signal: NodeJS.Signals) => {
    count++;
    if (count === 1) {
      if (phase === 'starting') logger.info({ signal }, 'stopping once the start has finished (another signal stops at once)');
      request(signal);
    } else if (count === 2 && phase === 'draining') {
      logger.warn({ signal }, 'second signal: closing the remaining connections now');
      repeat();
    } else {
      logger.warn({ signal }, 'stopping at once');
      process.exit(130);
    }
  };
  for (const signal of signals) process.on(signal, handle);
  return {
    requested,
    repeated,
    serving() {
      phase = 'serving';
    },
    draining() {
      phase = 'draining';
    },
  };
}

/**
 * Remembers the requests in flight, and answers the function that drains the server: it stops
 * accepting connections and closes the idle keep-alive ones; requests already running finish,
 * and their connections close after the response (`Connection: close` when the headers are not
 * sent yet, otherwise once it ends). Server-sent event streams end only when their client leaves,
 * so they are closed at once (EventSource clients reconnect, with Last-Event-ID, to a running
 * instance). What still runs after timeoutMs, or when `cutNow` resolves, is cut.
 */
export function trackRequests(server: Server): (timeoutMs: number, cutNow: Promise<void>) => Promise<{ drained: boolean; cut: number; ms: number }> {
  const running = new Set<ServerResponse>();
  let draining = false;
  server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) => {
    running.add(res);
    if (draining) closeConnectionAfter(res); // a further request on a keep-alive connection
    res.once('close', () => {
      running.delete(res);
      // Its connection is idle now, unless the response closed it: close it (the last one lets the server close).
      if (draining) server.closeIdleConnections();
    });
  });

  return async (timeoutMs, cutNow) => {
    const started = performance.now();
    draining = true;
    const closed = once(server, 'close');
    server.close(); // also closes idle keep-alive connections
    for (const res of running) {
      if (isEventStream(res)) res.destroy();
      else closeConnectionAfter(res);
    }
    server.closeIdleConnections();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'cut'>((resolve) => {
      timer = setTimeout(() => resolve('cut'), timeoutMs);
    });
    const outcome = await Promise.race([closed.then(() => 'drained' as const), timeout, cutNow.then(() => 'cut' as const)]);
    clearTimeout(timer);
    const cut = running.size;
    if (outcome === 'cut') {
      server.closeAllConnections();
      await closed;
    }
    return { drained: outcome === 'drained', cut, ms: Math.round(performance.now() - started) };
  };
}

function closeConnectionAfter(res: ServerResponse): void {
  if (!res.headersSent) res.setHeader('Connection', 'close');
}

function isEventStream(res: ServerResponse): boolean {
  return String(res.getHeader('content-type') ?? '').startsWith('text/event-stream');
}
