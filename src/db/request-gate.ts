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
 * Not only the chunk inserts: a job's run is background work (`asBackground`, worker.ts), and every
 * statement and transaction it sends on the pool waits at the gate before it starts
 * (transaction-guard.ts), so a request of three statements is not interleaved with the job's
 * transactions in between its own statements; it waits at most for the one unit of the job's work
 * already on the connection when it came.
 *
 * On a database server each request has a connection of its own and the worker its own process:
 * there the gate is open (`waitForIdle` resolves at once).
 */
import { AsyncLocalStorage } from 'node:async_hooks';

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

const background = new AsyncLocalStorage<RequestGate>();

/** Runs `fn` as background work: its pool statements and transactions wait at `gate` before they start (transaction-guard.ts). */
export function asBackground<T>(gate: RequestGate, fn: () => T): T {
  return gate === OPEN_GATE ? fn() : background.run(gate, fn);
}

/** The gate the caller's background work waits at (`asBackground`); undefined for a request's work. */
export function backgroundGate(): RequestGate | undefined {
  return background.getStore();
}
