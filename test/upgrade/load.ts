/**
 * The clients of an upgrade run: a few users of one organization, each a closed loop through the
 * balancer with a short pause between requests, so the load stays moderate on two cores that also
 * carry PostgreSQL and up to seven service processes. As in the soak's mix (bench/soak-mix.ts),
 * paced actions come first when they are due, each at a fixed period per user, the users' phases
 * spread over it:
 * - a search every 6 s (10 a minute; a user may make 30: a search of 100 000 chunks takes about
 *   a second of both cores here), on the large workspace three
 *   times in four, else on a small one; unfiltered, or filtered by media type (PDF: 7% of the
 *   documents, walked in the HNSW graph; HTML: 3%, an exact scan), by creation date or by ids;
 * - an upload every 7 s (documents.createUpload, the signed PUT, documents.complete) and its
 *   document.extract job; once that has succeeded, the document's document.index job (the
 *   README's walkthrough "jobs and search");
 * - a text.embed job every 9 s.
 * Otherwise a read or a write: documents.list of the large workspace (now and then its next
 * page), documents.get and documents.text of its documents, workspaces.list and /me over REST,
 * jobs.list, jobs.get, workspaces.update. Every job created is kept with the time it was created.
 */
import { ApiClientError, createClient } from '../../clients/typescript/src/index.ts';
import { proseDocument, proseParagraphs } from '../../bench/prose.ts';
import type { Balancer } from './balancer.ts';

type Client = ReturnType<typeof createClient>;

const PACE = { search: 6_000, upload: 7_000, embed: 9_000 } as const;
const PHASE = { search: 0, upload: 1 / 3, embed: 2 / 3 } as const;
const PAUSE_MS = 120;
const DAY_MS = 86_400_000;

const PARAGRAPHS = Array.from({ length: 40 }, (_, i) => proseParagraphs(300 + i).next().value.text);
const UPLOADS = Array.from({ length: 12 }, (_, i) => new TextEncoder().encode(proseDocument(1_500, 700 + i)));

/** What the clients work on: the organization, the generated workspaces and two made through the API. */
export interface Workload {
  organizationId: string;
  /** The large workspace and some of its documents (for id filters, documents.get and documents.text). */
  large: { id: string; documentIds: string[] };
  small: string[];
  uploads: string;
  scratch: string;
  queries: string[];
}

export interface LoadUser {
  index: number;
  token: string;
}

export interface CreatedJob {
  id: string;
  kind: string;
  /** ms on the balancer's clock */
  at: number;
}

export interface LoadCounts {
  jobs: CreatedJob[];
  searches: number;
  uploads: number;
  /** Exceptions that are not answers of the service: a bug of the load itself. */
  clientExceptions: string[];
}

interface UserState {
  user: LoadUser;
  client: Client;
  due: Record<keyof typeof PACE, number>;
  /** Uploaded documents whose extract job has not been followed by an index job yet. */
  extracting: { documentId: string; jobId: string }[];
  renames: number;
  cursor: string | null;
}

/** Runs every user's loop until `stop` resolves, then lets the requests in flight finish. */
export async function runLoad(users: LoadUser[], balancer: Balancer, workload: Workload, stop: Promise<void>): Promise<LoadCounts> {
  const counts: LoadCounts = { jobs: [], searches: 0, uploads: 0, clientExceptions: [] };
  let stopped = false;
  void stop.then(() => (stopped = true));
  const start = performance.now();
  const states = users.map((user): UserState => ({
    user,
    // No retries: a lost connection must show as the transport error it is.
    client: createClient({ baseUrl: balancer.origin, token: user.token, fetch: balancer.fetch, retries: 0 }),
    due: {
      search: start + (PACE.search * (user.index + PHASE.search)) / users.length,
      upload: start + (PACE.upload * (user.index + PHASE.upload)) / users.length,
      embed: start + (PACE.embed * (user.index + PHASE.embed)) / users.length,
    },
    extracting: [],
    renames: 0,
    cursor: null,
  }));
  await Promise.all(
    states.map(async (state) => {
      while (!stopped) {
        try {
          await step(state, balancer, workload, counts);
        } catch (error) {
          // Answers and transport errors are the balancer's record; anything else is ours.
          if (!(error instanceof ApiClientError || error instanceof Refused || isTransportError(error)) && counts.clientExceptions.length < 20) {
            counts.clientExceptions.push(error instanceof Error ? (error.stack ?? error.message) : String(error));
          }
        }
        await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
      }
    }),
  );
  return counts;
}

async function step(state: UserState, balancer: Balancer, workload: Workload, counts: LoadCounts): Promise<void> {
  const now = performance.now();
  const { client, due } = state;
  const job = async (create: Promise<{ id: string; kind: string }>) => {
    const at = balancer.now();
    const created = await create;
    counts.jobs.push({ id: created.id, kind: created.kind, at });
    return created;
  };
  if (now >= due.search) {
    due.search = next(due.search, PACE.search, now);
    counts.searches++;
    const large = Math.random() < 0.75;
    await client.documents.search({ workspaceId: large ? workload.large.id : pick(workload.small), query: pick(workload.queries), limit: 10, ...searchFilters(workload, large) });
  } else if (now >= due.upload) {
    due.upload = next(due.upload, PACE.upload, now);
    const bytes = pick(UPLOADS);
    const { document, upload } = await client.documents.createUpload({
      organizationId: workload.organizationId,
      workspaceId: workload.uploads,
      name: 'report.md',
      contentType: 'text/markdown',
      size: bytes.byteLength,
    });
    const put = await balancer.fetch(upload.url, { method: 'PUT', headers: upload.headers, body: bytes });
    if (put.status !== 200) throw new Refused(`the signed PUT answered ${put.status}`);
    await client.documents.complete({ id: document.id });
    counts.uploads++;
    const extract = await job(client.jobs.create({ organizationId: workload.organizationId, kind: 'document.extract', documentId: document.id }));
    state.extracting.push({ documentId: document.id, jobId: extract.id });
  } else if (now >= due.embed) {
    due.embed = next(due.embed, PACE.embed, now);
    await job(client.jobs.create({ organizationId: workload.organizationId, kind: 'text.embed', input: { texts: [pick(PARAGRAPHS)] } }));
  } else if (state.extracting.length > 0 && Math.random() < 0.3) {
    // The oldest upload's extraction: once it succeeded, its index job.
    const { documentId, jobId } = state.extracting[0]!;
    const extract = await client.jobs.get({ id: jobId });
    if (extract.status === 'succeeded') {
      state.extracting.shift();
      await job(client.jobs.create({ organizationId: workload.organizationId, kind: 'document.index', documentId }));
    } else if (extract.status === 'failed' || extract.status === 'canceled') state.extracting.shift();
  } else {
    await readOrWrite(state, balancer, workload, counts);
  }
}

type SearchInput = Parameters<Client['documents']['search']>[0];

function searchFilters(workload: Workload, large: boolean): Pick<SearchInput, 'filters'> {
  const roll = Math.random();
  if (roll < 0.4) return {};
  if (roll < 0.55) return { filters: { contentTypes: ['application/pdf'] } };
  if (roll < 0.7) return { filters: { contentTypes: ['text/html'] } };
  if (roll < 0.85) return { filters: { createdAfter: new Date(Date.now() - 60 * DAY_MS) } };
  return large ? { filters: { documentIds: Array.from({ length: 5 }, () => pick(workload.large.documentIds)) } } : {};
}

async function readOrWrite(state: UserState, balancer: Balancer, workload: Workload, counts: LoadCounts): Promise<void> {
  const { client } = state;
  const { organizationId } = workload;
  const get = async (path: string) => {
    const response = await balancer.fetch(`${balancer.origin}${path}`, { headers: { authorization: `Bearer ${state.user.token}` } });
    if (response.status !== 200) throw new Refused(`GET ${path} answered ${response.status}`);
  };
  const roll = Math.random();
  if (roll < 0.25) {
    const page = await client.documents.list({ organizationId, workspaceId: workload.large.id, limit: 20, ...(state.cursor ? { cursor: state.cursor } : {}) });
    // Now and then the next page, as a reader scrolling would.
    state.cursor = Math.random() < 0.5 ? (page.nextCursor ?? null) : null;
  } else if (roll < 0.35) await client.documents.get({ id: pick(workload.large.documentIds) });
  else if (roll < 0.42) await client.documents.text({ id: pick(workload.large.documentIds) });
  else if (roll < 0.55) await get(`/api/v1/workspaces?organizationId=${organizationId}`);
  else if (roll < 0.65) await get('/api/v1/me');
  else if (roll < 0.8) await client.jobs.list({ organizationId, limit: 20 });
  else if (roll < 0.9) {
    const created = counts.jobs.at(-1 - Math.floor(Math.random() * Math.min(counts.jobs.length, 10)));
    if (created) await client.jobs.get({ id: created.id });
    else await client.workspaces.get({ organizationId, slug: 'uploads' });
  } else await client.workspaces.update({ id: workload.scratch, name: `Scratch ${state.user.index}.${++state.renames}` });
}

/** A non-success answer to a request made without the generated client (the balancer recorded it). */
class Refused extends Error {}

function isTransportError(error: unknown): boolean {
  return error instanceof TypeError || (error instanceof DOMException && (error.name === 'TimeoutError' || error.name === 'AbortError'));
}

/** One period after the last due time; after a stall of more than a period, one period from now. */
function next(due: number, period: number, now: number): number {
  return due + period >= now ? due + period : now + period;
}

function pick<T>(items: readonly T[]): T {
  return items[Math.floor(Math.random() * items.length)]!;
}
