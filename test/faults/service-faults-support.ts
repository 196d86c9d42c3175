/**
 * Shared by the fault tests of the service's neighbours (the AI service, S3): a loopback port the
 * test switches between forwarding, closed and hung; an AI client with short deadlines; and the
 * checks every fault test ends with: each job's ledger rows add up to its credits, charged once,
 * nothing left running or queued (in `jobs` and in pg-boss), no 500 answered to anyone.
 */
import { once } from 'node:events';
import { connect, createServer, type Socket } from 'node:net';
import { expect } from 'vitest';
import type { AiClient } from '../../src/ai-service/client.ts';
import type { Database } from '../../src/db/connection.ts';

export type PortMode = 'up' | 'down' | 'hang';

export interface SwitchablePort {
  readonly port: number;
  /** http://127.0.0.1:PORT */
  readonly url: string;
  /** Forwards every connection to the target port. */
  up(): Promise<void>;
  /** Stops listening (connections are refused, as by a stopped server) and cuts the open ones. */
  down(): Promise<void>;
  /** Accepts connections and reads them, but never answers (a hung server); cuts the open ones. */
  hang(): Promise<void>;
  close(): Promise<void>;
}

/** A TCP forwarder on a loopback port of its own, in front of `127.0.0.1:target`; starts `up`. */
export async function switchablePort(target: number): Promise<SwitchablePort> {
  let mode: PortMode = 'up';
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {}); // a cut connection is the point
  };
  const cut = () => {
    for (const socket of sockets) socket.destroy();
  };
  const server = createServer((client) => {
    track(client);
    if (mode !== 'up') {
      client.resume();
      return;
    }
    const upstream = connect(target, '127.0.0.1');
    track(upstream);
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  const listen = async () => {
    if (server.listening) return;
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
  };
  const stop = async () => {
    if (!server.listening) return;
    const closed = new Promise((resolve) => server.close(resolve));
    cut();
    await closed;
  };
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    async up() {
      cut();
      mode = 'up';
      await listen();
    },
    async down() {
      mode = 'down';
      await stop();
    },
    async hang() {
      cut();
      mode = 'hang';
      await listen();
    },
    close: stop,
  };
}

/**
 * The same client with every call's deadline cut to `ms` (the real ones, client.ts: embed 60 s,
 * extract 120 s, search 10 s): a hang ends in the test's time, through the client's own timeout.
 */
export function withDeadline(ai: AiClient, ms: number): AiClient {
  const cap = <T extends { timeoutMs?: number }>(options: T | undefined) => ({ ...options, timeoutMs: Math.min(options?.timeoutMs ?? ms, ms) });
  return {
    embed: (texts, options) => ai.embed(texts, cap(options)),
    extract: (bytes, contentType, options) => ai.extract(bytes, contentType, cap(options)),
    health: (options) => ai.health(cap(options)),
  };
}

export interface JobLedger {
  id: string;
  status: string;
  attempt: number;
  credits: number;
  /** Charges minus refunds in credit_ledger for the job. */
  net: number;
  /** How many charge rows (amount > 0). */
  charges: number;
  /** pg-boss's state of the job's queue entries. */
  queue: string[];
}

/** Every job of the organization with its ledger and queue state. */
export async function jobLedgers(db: Database, organizationId: string): Promise<JobLedger[]> {
  return db.sql<JobLedger[]>`
    select j.id, j.status, j.attempt, j.credits,
      coalesce((select sum(amount) from credit_ledger l where l.job_id = j.id), 0)::int as net,
      (select count(*) from credit_ledger l where l.job_id = j.id and l.amount > 0)::int as charges,
      coalesce((select array_agg(q.state::text order by q.created_on) from pgboss.job q where q.name = 'jobs' and q.data->>'jobId' = j.id), '{}') as queue
    from jobs j where j.organization_id = ${organizationId} order by j.created_at, j.id`;
}

/**
 * Nothing lost and nothing twice: every job settled (none queued or running, none left active in
 * pg-boss), its ledger adds up to its credits, and it was charged exactly once (jobs here are not
 * retried by jobs.retry, so each has one creation charge; an index job may add the rest it found due).
 */
export async function expectSettledAndBalanced(db: Database, organizationId: string): Promise<JobLedger[]> {
  const jobs = await jobLedgers(db, organizationId);
  for (const job of jobs) {
    expect(['succeeded', 'failed'], JSON.stringify(job)).toContain(job.status);
    expect(job.net, JSON.stringify(job)).toBe(job.credits);
    expect(job.charges, JSON.stringify(job)).toBe(1);
    expect(job.queue, JSON.stringify(job)).toEqual(['completed']);
  }
  return jobs;
}

/** No request was answered with a 500 (a 503 is the declared answer to a dependency being down). */
export function expectNoInternalErrors(logs: Record<string, any>[]): void {
  const errors = logs.filter((line) => line.msg === 'request' && line.status >= 500 && line.status !== 503);
  expect(errors).toEqual([]);
  expect(logs.filter((line) => line.msg === 'internal error')).toEqual([]);
}

/** The job's status changes in its stream events, in order. */
export async function statusHistory(db: Database, jobId: string): Promise<string[]> {
  const rows = await db.sql<{ status: string }[]>`select data->>'status' as status from job_events where job_id = ${jobId} order by id`;
  return rows.map((row) => row.status);
}
