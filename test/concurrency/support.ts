/**
 * Shared pieces of the concurrency tests: a plan lookup whose limits tests set per organization,
 * a typed client through the contract-checking fetch, and bursts of calls started all at once.
 */
import { expect } from 'vitest';
import { ApiClientError, createClient } from '../../clients/typescript/src/index.ts';
import type { LimitKind, PlanLookup } from '../../src/credits/plans.ts';
import type { Database } from '../../src/db/connection.ts';
import { openSecondClient } from '../support/database.ts';
import { clientFetch, type TestServer } from '../support/server.ts';
import type { TestUser } from '../support/users.ts';

/** Enough for bursts of a hundred calls from one address. */
export const BURST_ENV = { RATE_LIMIT_PER_MINUTE: '100000', AUTH_RATE_LIMIT_PER_MINUTE: '100000' };

/** Organizations listed in `limits` are billed on `free` with those limits (the rest unlimited); the others are unbilled. */
export function settablePlans(): { plans: PlanLookup; limits: Map<string, Partial<Record<LimitKind, number>>> } {
  const limits = new Map<string, Partial<Record<LimitKind, number>>>();
  const unlimited = Number.MAX_SAFE_INTEGER;
  return {
    limits,
    plans: {
      limitsFor: async (organizationId) => {
        const set = limits.get(organizationId);
        return set ? { plan: 'free', limits: { workspaces: unlimited, members: unlimited, aiCredits: unlimited, storageBytes: unlimited, ...set } } : null;
      },
    },
  };
}

export function clientFor(server: TestServer, user: TestUser | { token: string }) {
  return createClient({ baseUrl: server.origin, token: user.token, fetch: clientFetch(server) });
}

export type Outcome<T> = { ok: true; value: T } | { ok: false; code: string; status: number };

/**
 * Starts every call at once and waits for all. A refusal with a declared error code is an
 * outcome; anything else (a 500 from a deadlock or a serialization failure, a network error) fails the test.
 */
export async function burst<T>(calls: (() => Promise<T>)[]): Promise<Outcome<T>[]> {
  const settled = await Promise.allSettled(calls.map((call) => call()));
  return settled.map((result) => {
    if (result.status === 'fulfilled') return { ok: true, value: result.value };
    const error = result.reason;
    if (!(error instanceof ApiClientError) || !error.defined || error.status >= 500) throw error;
    return { ok: false, code: error.code, status: error.status };
  });
}

export const succeeded = <T>(outcomes: Outcome<T>[]): T[] => outcomes.flatMap((outcome) => (outcome.ok ? [outcome.value] : []));

/** Every outcome is a success or one of `codes`. */
export function expectOnly<T>(outcomes: Outcome<T>[], codes: string[]): void {
  for (const outcome of outcomes) if (!outcome.ok) expect(codes, JSON.stringify(outcome)).toContain(outcome.code);
}

/**
 * How many API instances (and worker processes) a multi-instance suite starts: `today` unless
 * TEST_API_INSTANCES (TEST_WORKERS) says otherwise; `make test-pooler` runs with three and two
 * (scripts/test-pooler.sh). Never fewer than `today`, so a suite's assertions keep their meaning.
 */
export function apiInstances(today: number): number {
  return countFrom(process.env.TEST_API_INSTANCES, today);
}

export function workerProcesses(today: number): number {
  return countFrom(process.env.TEST_WORKERS, today);
}

function countFrom(value: string | undefined, today: number): number {
  const n = Number(value);
  return Number.isInteger(n) && n > today ? n : today;
}

/**
 * The database clients of `n` API instances on one test database: `db` itself, then one more
 * client (on a real server, a pool of its own, as another process has) for each other instance.
 * Close the extra ones before `db`.
 */
export async function instanceClients(db: Database, n: number): Promise<Database[]> {
  const clients = [db];
  while (clients.length < n) clients.push(await openSecondClient(db));
  return clients;
}
