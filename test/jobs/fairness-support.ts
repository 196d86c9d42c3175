/**
 * The fairness suites' AI service: a stand-in HTTP server that speaks the embeddings protocol of a
 * hosted provider (POST /v1/embeddings; no companion health route, so the worker queues no
 * re-indexing) and holds every request until the test answers it. A text.embed job's first text
 * names it ("A3", "B0"), so the order requests arrive in is the order jobs started in, and the
 * test decides when each job ends: jobs are as long as the test wants, with no clock involved.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Database } from '../../src/db/connection.ts';

export interface HeldEmbeddings {
  /** http://127.0.0.1:PORT, for AI_URL. */
  url: string;
  /** The first text of every request, in the order they arrived: the order the jobs started in. */
  arrivals: string[];
  /** Requests arrived and not answered yet. */
  held(): number;
  /** Answers the oldest held request; false when none is held. */
  answerOldest(): boolean;
  /** Resolves once `count` requests are held. */
  untilHeld(count: number): Promise<void>;
  /** Resolves at the next arrival. */
  arrival(): Promise<void>;
  /** From now on answers every request, held ones included, at once (so workers stop quickly). */
  answerAll(): void;
  /** From now on holds requests again. */
  hold(): void;
  close(): Promise<void>;
}

export async function heldEmbeddings(): Promise<HeldEmbeddings> {
  const arrivals: string[] = [];
  const held: ServerResponse[] = [];
  let waiters: (() => void)[] = [];
  let open = false;
  const answer = (res: ServerResponse, texts: string[]) => {
    const embedding = Array.from({ length: 384 }, (_, i) => (i === 0 ? 1 : 0));
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ object: 'list', data: texts.map((_, index) => ({ object: 'embedding', index, embedding })), model: 'stand-in', usage: { prompt_tokens: 1, total_tokens: 1 } }));
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      if (req.url !== '/v1/embeddings') {
        res.writeHead(404).end();
        return;
      }
      const texts = (JSON.parse(body) as { input: string[] }).input;
      arrivals.push(texts[0]!);
      // Answered with the number of texts it asked for, whenever the test says.
      const pending = Object.assign(res, { texts });
      if (open) answer(res, texts);
      else held.push(pending);
      const woken = waiters;
      waiters = [];
      for (const wake of woken) wake();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const arrival = () => new Promise<void>((resolve) => waiters.push(resolve));
  const answerAll = () => {
    open = true;
    for (const res of held.splice(0) as (ServerResponse & { texts: string[] })[]) answer(res, res.texts);
  };
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    arrivals,
    held: () => held.length,
    answerOldest() {
      const res = held.shift() as (ServerResponse & { texts: string[] }) | undefined;
      if (!res) return false;
      answer(res, res.texts);
      return true;
    },
    async untilHeld(count) {
      while (held.length < count) await arrival();
    },
    arrival,
    hold() {
      open = false;
    },
    answerAll,
    async close() {
      answerAll();
      server.closeAllConnections();
      server.close();
    },
  };
}

/**
 * Answers held requests one at a time, oldest first, waiting for the next one whenever none is
 * held, until `done` answers true: the workers run the queue in its own order, one job ending at a
 * time. The test's timeout bounds it.
 */
export async function serveUntil(ai: HeldEmbeddings, done: () => Promise<boolean>): Promise<void> {
  while (!(await done())) {
    if (ai.answerOldest()) continue;
    // Nothing held: wait for the next request, or look at `done` again shortly (the last answer
    // may still be on its way to the database).
    await Promise.race([ai.arrival(), new Promise((resolve) => setTimeout(resolve, 100))]);
  }
}

/** Whether every one of `ids` has succeeded. */
export async function allSucceeded(db: Database, ids: string[]): Promise<boolean> {
  const [row] = await db.sql<{ count: number }[]>`select count(*)::int as count from jobs where id in ${db.sql(ids)} and status = 'succeeded'`;
  return row!.count === ids.length;
}

/** How many of the organization's jobs are still queued. */
export async function queuedCount(db: Database, organizationId: string): Promise<number> {
  const [row] = await db.sql<{ count: number }[]>`select count(*)::int as count from jobs where organization_id = ${organizationId} and status = 'queued'`;
  return row!.count;
}

/** The first text of every job waiting in pg-boss for its first run, in the order pg-boss fetches them. */
export async function fetchOrder(db: Database): Promise<string[]> {
  const rows = await db.sql<{ label: string }[]>`
    select j.input->'texts'->>0 as label from pgboss.job q join jobs j on j.id = q.data->>'jobId'
    where q.name = 'jobs' and q.state = 'created' order by q.priority desc, q.created_on`;
  return rows.map((row) => row.label);
}
