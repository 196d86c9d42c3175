/**
 * The embedded database has one connection, and its statements run one at a time in arrival order.
 * While a document's chunks are stored, the worker's inserts (one row each, a few ms of HNSW work:
 * documents/text-store.ts) and an API request's statements (its session, its access check, its
 * query) would take turns, so a request of three statements waited behind three inserts. Here
 * the worker's background writes wait, before each statement, until no API request is in flight:
 * a request then waits for at most the one insert in progress (docs/benchmarks.md, API latency
 * while indexing). A write waits at most MAX_WAIT_MS, so a steady stream of requests slows
 * indexing down but cannot stop it.
 *
 * On a database server each request has a connection of its own and the worker its own process:
 * there the gate is open (`waitForIdle` resolves at once).
 */
export interface RequestGate {
  /** Counts a request from now until `done` is called (once). */
  enter(): () => void;
  /** Resolves when no request is in flight, or after MAX_WAIT_MS. */
  waitForIdle(): Promise<void>;
}

export const MAX_WAIT_MS = 50;

export const OPEN_GATE: RequestGate = { enter: () => () => {}, waitForIdle: () => Promise.resolve() };

export function createRequestGate(): RequestGate {
  let active = 0;
  let waiters: (() => void)[] = [];
  const release = () => {
    const ready = waiters;
    waiters = [];
    for (const resolve of ready) resolve();
  };
  return {
    enter() {
      active += 1;
      let left = false;
      return () => {
        if (left) return;
        left = true;
        active -= 1;
        if (active === 0) release();
      };
    },
    waitForIdle() {
      if (active === 0) return Promise.resolve();
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          waiters = waiters.filter((waiter) => waiter !== done);
          resolve();
        }, MAX_WAIT_MS);
        const done = () => {
          clearTimeout(timer);
          resolve();
        };
        waiters.push(done);
      });
    },
  };
}
