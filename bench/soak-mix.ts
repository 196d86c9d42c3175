/**
 * The soak's traffic (bench/soak.ts): one signed-up user per client, each the owner of an
 * organization of its own with a home workspace (its documents) and a scratch workspace (renamed
 * over and over). A client is a closed loop: it sends the next request as soon as the last one is
 * answered. Paced actions come first when they are due, so their rate does not follow the
 * throughput: a search every 2.5-3 s (at most 24 a minute, under the 30 a minute per user of the
 * specification), a text.embed job every 2.5-3.5 s (one in four cancelled at once), and an upload
 * (createUpload, the signed PUT, complete) with a document.index job every 8-10 s. Otherwise a
 * read or a write: workspaces.list and /me over REST, documents.list, jobs.list, jobs.get,
 * workspaces.update, and workspaces.create followed by workspaces.delete. Each user keeps at most
 * three documents (the oldest whose index job has settled is deleted), so tables that clients read
 * stay bounded; jobs, their events and the credit ledger are history and grow (read by index only).
 * The paced actions keep a fixed period per user, and the users' phases are spread evenly over it,
 * so every window carries the same paced work: with random intervals the uploads of a 20-s window
 * (each an index job for the AI service, which shares the two cores with the API) varied by about
 * a sixth. (That was not what made short windows' throughput vary: see soak-report.ts, LIMITS.)
 * Beside the loop each user holds two jobs.stream connections (under the five a user may hold),
 * each closed after 10-30 s and opened again.
 */
import { ApiClientError, createClient } from '../clients/typescript/src/index.ts';
import { proseDocument, proseParagraphs } from './prose.ts';
import type { Recorder } from './soak-record.ts';

type Client = ReturnType<typeof createClient>;

/** Each user's period of each paced action (the mean of the random intervals the soak used before). */
const PACE = { search: 2_750, job: 3_000, upload: 9_000 } as const;
/** Where in its period a user's first action of each kind falls, as a share of the step between users. */
const PHASE = { search: 0, job: 1 / 3, upload: 2 / 3 } as const;
const KEPT_DOCUMENTS = 3;
/** Past this many the oldest document goes even if its job has not settled. */
const MAX_DOCUMENTS = 6;
const STREAMS_PER_USER = 2;
const STREAM_LIFETIME_MS = [10_000, 30_000] as const;
const SETTLED = new Set(['succeeded', 'failed', 'canceled']);

const PARAGRAPHS = Array.from(take(proseParagraphs(7), 300), (item) => item.text);
const QUERIES = PARAGRAPHS.map((text) => text.split('. ')[0]!.slice(0, 200));
const DOCUMENTS = Array.from({ length: 24 }, (_, i) => new TextEncoder().encode(proseDocument(1_500, 100 + i)));

export interface SoakUser {
  index: number;
  token: string;
  organizationId: string;
  homeWorkspaceId: string;
  scratchWorkspaceId: string;
  client: Client;
  documents: { id: string; jobId: string }[];
  due: { search: number; job: number; upload: number };
  renames: number;
}

/** What the mix counts beside the requests themselves. */
export interface MixCounts {
  streamsOpened: number;
  streamEvents: number;
  /** Streams refused or broken by the service (TOO_MANY_REQUESTS event, a dropped connection). */
  streamFailures: string[];
  /** Exceptions that are not answers of the service: a bug in the soak itself. */
  clientExceptions: string[];
}

export function newCounts(): MixCounts {
  return { streamsOpened: 0, streamEvents: 0, streamFailures: [], clientExceptions: [] };
}

/** Signs up `count` users through /api/auth, each with an organization and two workspaces. */
export async function createUsers(baseUrl: string, count: number, recorder: Recorder): Promise<SoakUser[]> {
  const run = Date.now().toString(36);
  const post = async (path: string, body: unknown, token?: string) => {
    const response = await recorder.fetch(`${baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
    if (response.status !== 200) throw new Error(`POST ${path} answered ${response.status}: ${await response.text()}`);
    return (await response.json()) as { token?: string; id?: string };
  };
  const users: SoakUser[] = [];
  for (let index = 0; index < count; index++) {
    const email = `soak-${run}-${index}@example.com`;
    const { token = '' } = await post('/api/auth/sign-up/email', { name: `Soak ${index}`, email, password: 'correct horse battery staple' });
    const organization = await post('/api/auth/organization/create', { name: `Soak ${index}`, slug: `soak-${run}-${index}` }, token);
    const client = createClient({ baseUrl, token, fetch: recorder.fetch });
    const organizationId = organization.id ?? '';
    const home = await client.workspaces.create({ organizationId, name: 'Home', slug: 'home' });
    const scratch = await client.workspaces.create({ organizationId, name: 'Scratch', slug: 'scratch' });
    users.push({
      index,
      token,
      organizationId,
      homeWorkspaceId: home.id,
      scratchWorkspaceId: scratch.id,
      client,
      documents: [],
      renames: 0,
      due: { search: 0, job: 0, upload: 0 }, // set by runMix
    });
  }
  return users;
}

/**
 * Runs the users' clients and streams until `stop` resolves, then lets the requests in flight
 * finish and closes the streams.
 */
export async function runMix(users: SoakUser[], baseUrl: string, recorder: Recorder, counts: MixCounts, stop: Promise<void>): Promise<void> {
  // Paced actions start spread evenly over their first period, not all at once after a pause.
  const now = performance.now();
  const first = (user: SoakUser, action: keyof typeof PACE) => now + (PACE[action] * (user.index + PHASE[action])) / users.length;
  for (const user of users) user.due = { search: first(user, 'search'), job: first(user, 'job'), upload: first(user, 'upload') };
  let stopped = false;
  const streams = new AbortController();
  void stop.then(() => {
    stopped = true;
    streams.abort();
  });
  const loops = users.map(async (user) => {
    while (!stopped) await guarded(counts, () => step(user, baseUrl, recorder));
  });
  const streamLoops = users.flatMap((user) =>
    Array.from({ length: STREAMS_PER_USER }, async () => {
      while (!stopped) {
        await guarded(counts, () => holdStream(user, counts, streams.signal));
        if (!stopped) await sleep(between([500, 2_000]));
      }
    }),
  );
  await Promise.all([...loops, ...streamLoops]);
}

/** One action of a user's loop: a paced one when due, else a read or a write. */
async function step(user: SoakUser, baseUrl: string, recorder: Recorder): Promise<void> {
  const now = performance.now();
  const { client, organizationId } = user;
  if (now >= user.due.search) {
    user.due.search = next(user.due.search, PACE.search, now);
    await client.documents.search({ workspaceId: user.homeWorkspaceId, query: pick(QUERIES), limit: 10 });
  } else if (now >= user.due.job) {
    user.due.job = next(user.due.job, PACE.job, now);
    const job = await client.jobs.create({ organizationId, kind: 'text.embed', input: { texts: [pick(PARAGRAPHS)] } });
    if (Math.random() < 0.25) await expected(client.jobs.cancel({ id: job.id }), 'CONFLICT'); // often already running
  } else if (now >= user.due.upload) {
    user.due.upload = next(user.due.upload, PACE.upload, now);
    await uploadAndIndex(user, recorder);
    await pruneDocuments(user);
  } else {
    await readOrWrite(user, baseUrl, recorder);
  }
}

async function uploadAndIndex(user: SoakUser, recorder: Recorder): Promise<void> {
  const bytes = pick(DOCUMENTS);
  const { document, upload } = await user.client.documents.createUpload({
    organizationId: user.organizationId,
    workspaceId: user.homeWorkspaceId,
    name: 'report.md',
    contentType: 'text/markdown',
    size: bytes.byteLength,
  });
  const put = await recorder.fetch(upload.url, { method: 'PUT', headers: upload.headers, body: bytes });
  if (put.status !== 200) throw new Refused(`the signed PUT answered ${put.status}`);
  await user.client.documents.complete({ id: document.id });
  const job = await user.client.jobs.create({ organizationId: user.organizationId, kind: 'document.index', documentId: document.id });
  user.documents.push({ id: document.id, jobId: job.id });
}

/** Deletes the oldest document once its index job has settled (or once there are too many). */
async function pruneDocuments(user: SoakUser): Promise<void> {
  const oldest = user.documents[0];
  if (!oldest || user.documents.length <= KEPT_DOCUMENTS) return;
  const job = await user.client.jobs.get({ id: oldest.jobId });
  if (!SETTLED.has(job.status) && user.documents.length <= MAX_DOCUMENTS) return;
  user.documents.shift();
  await user.client.documents.delete({ id: oldest.id });
}

async function readOrWrite(user: SoakUser, baseUrl: string, recorder: Recorder): Promise<void> {
  const { client, organizationId } = user;
  const roll = Math.random();
  const get = async (path: string) => {
    const response = await recorder.fetch(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${user.token}` } });
    if (response.status !== 200) throw new Refused(`GET ${path} answered ${response.status}`);
  };
  if (roll < 0.18) await get(`/api/v1/workspaces?organizationId=${organizationId}`);
  else if (roll < 0.32) await get('/api/v1/me');
  else if (roll < 0.5) await client.documents.list({ organizationId, workspaceId: user.homeWorkspaceId, limit: 20 });
  else if (roll < 0.68) await client.jobs.list({ organizationId, limit: 20 });
  else if (roll < 0.76) {
    const document = user.documents.at(-1);
    if (document) await client.jobs.get({ id: document.jobId });
    else await client.workspaces.get({ organizationId, slug: 'home' });
  } else if (roll < 0.92) {
    await client.workspaces.update({ id: user.scratchWorkspaceId, name: `Scratch ${++user.renames}` });
  } else {
    const slug = `tmp-${user.index}-${++user.renames}`;
    const workspace = await client.workspaces.create({ organizationId, name: 'Temporary', slug });
    await client.workspaces.delete({ id: workspace.id });
  }
}

/** One jobs.stream connection of the user's organization, read until it has lived 10-30 s. */
async function holdStream(user: SoakUser, counts: MixCounts, stopAll: AbortSignal): Promise<void> {
  if (stopAll.aborted) return;
  const signal = AbortSignal.any([stopAll, AbortSignal.timeout(Math.round(between(STREAM_LIFETIME_MS)))]);
  try {
    for await (const event of user.client.jobs.stream({ organizationId: user.organizationId }, { signal, reconnect: false })) {
      if (event.event === 'ready') counts.streamsOpened++;
      else if (event.event === 'job') counts.streamEvents++;
    }
    if (!signal.aborted) counts.streamFailures.push('the service ended a stream early');
  } catch (error) {
    if (signal.aborted) return;
    counts.streamFailures.push(error instanceof ApiClientError ? `${error.status} ${error.code}: ${error.message}` : String(error));
  }
}

/** A non-success answer to a request made without the generated client (the Recorder counted it). */
class Refused extends Error {}

/** Answers of the service are recorded by the Recorder; anything else is the soak's own bug. */
async function guarded(counts: MixCounts, action: () => Promise<void>): Promise<void> {
  try {
    await action();
  } catch (error) {
    if (error instanceof ApiClientError || error instanceof Refused || isNetworkError(error)) return;
    if (counts.clientExceptions.length < 20) counts.clientExceptions.push(error instanceof Error ? (error.stack ?? error.message) : String(error));
  }
}

function isNetworkError(error: unknown): boolean {
  return error instanceof TypeError && error.message === 'fetch failed';
}

async function expected(call: Promise<unknown>, code: string): Promise<void> {
  try {
    await call;
  } catch (error) {
    if (!(error instanceof ApiClientError && error.code === code)) throw error;
  }
}

/**
 * The next time an action is due: one period after the last due time, so the phases stay spread;
 * after a stall of more than a period, one period from now instead of a burst that catches up.
 */
function next(due: number, period: number, now: number): number {
  return due + period >= now ? due + period : now + period;
}

function between([low, high]: readonly [number, number]): number {
  return low + Math.random() * (high - low);
}

function pick<T>(items: readonly T[]): T {
  return items[Math.floor(Math.random() * items.length)]!;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function* take<T>(items: Iterable<T>, count: number): Generator<T> {
  if (count <= 0) return;
  for (const item of items) {
    yield item;
    if (--count === 0) return;
  }
}
