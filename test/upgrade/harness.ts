/**
 * An upgrade without downtime, run for real (issue 37, item 4), on a database of its own on a
 * PostgreSQL 15 server:
 *   set-up   the OLD release's `migrate`; its processes start (two `api` with WORKER=off, a
 *            `worker`, an `ai`); users sign up through its API; bench/large-data.ts adds the
 *            large workspace and a few small ones to their organization;
 *   old      the old release serves the load (load.ts) alone;
 *   migrate  the NEW release's `migrate` runs while the old one serves;
 *   mixed    the new release's `ai`, `api` and `worker` start and join: the balancer sends the
 *            load to old and new APIs alike;
 *   new      the balancer takes the old APIs out, then the old processes stop (SIGTERM: they
 *            drain); only the new ones serve.
 * Then the jobs created are waited for, everything is stopped and the database dropped, and the
 * run is judged (verdict.ts). What each step took is in `timings`.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { generateLargeData } from '../../bench/large-data.ts';
import { createClient } from '../../clients/typescript/src/index.ts';
import { newId } from '../../src/ids.ts';
import { Balancer } from './balancer.ts';
import { runMigrate, startProcess, type Deployment, type Release, type ServiceProcess } from './fleet.ts';
import { runLoad, type LoadCounts, type LoadUser, type Workload } from './load.ts';
import { judge, type SettledJob, type Timeline, type Verdict } from './verdict.ts';

export interface UpgradeOptions {
  /** A PostgreSQL 15+ server with pgvector, as a user that may create databases. */
  serverUrl: string;
  /** The database made for the run (dropped at the end). */
  database: string;
  old: Release;
  new: Release;
  /** Chunks per generated workspace: the large one first, then the small ones. */
  sizes: number[];
  clients: number;
  /** Seconds of load in each phase but `migrate` (which lasts as long as the migration). */
  seconds: { old: number; mixed: number; new: number };
  log(line: string): void;
}

export interface UpgradeResult {
  verdict: Verdict;
  timings: { step: string; seconds: number }[];
  /** The new release's `migrate`: the migrations it applied and its output. */
  migrate: { applied: string[]; ms: number; output: string };
}

const PASSWORD = 'correct horse battery staple';
const JOBS_SETTLE_MS = 120_000;

export async function runUpgrade(options: UpgradeOptions): Promise<UpgradeResult> {
  const { log } = options;
  const timings: UpgradeResult['timings'] = [];
  let last = performance.now();
  const step = (name: string) => {
    const now = performance.now();
    timings.push({ step: name, seconds: (now - last) / 1000 });
    log(`upgrade: ${name}: ${((now - last) / 1000).toFixed(1)} s`);
    last = now;
  };
  const admin = postgres(options.serverUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${options.database}`);
  const databaseUrl = `${options.serverUrl.slice(0, options.serverUrl.lastIndexOf('/'))}/${options.database}`;
  const sql = postgres(databaseUrl, { max: 2, onnotice: () => {} });
  const dataDir = await mkdtemp(join(tmpdir(), 'workspace-api-upgrade-'));
  const deployment: Deployment = {
    databaseUrl,
    dataDir,
    publicUrl: 'http://upgrade-balancer.invalid',
    secret: randomBytes(24).toString('base64url'),
    aiApiKey: randomBytes(24).toString('base64url'),
  };
  const running: ServiceProcess[] = [];
  const start = async (release: Release, kind: 'api' | 'worker' | 'ai', label: string, aiUrl?: string) => {
    const proc = await startProcess(release, kind, label, deployment, aiUrl);
    running.push(proc);
    return proc;
  };
  try {
    // --- set-up: the old release, its users, the large data ---------------------------------------
    const oldMigrate = await runMigrate(options.old, deployment);
    if (oldMigrate.code !== 0) throw new Error(`the old release's migrate exited ${oldMigrate.code}: ${oldMigrate.output.slice(-2000)}`);
    step(`old release's migrate (${oldMigrate.applied.length} migrations)`);
    const oldAi = await start(options.old, 'ai', 'old-ai');
    const oldProcesses = await Promise.all([start(options.old, 'api', 'old-api-1', oldAi.url), start(options.old, 'api', 'old-api-2', oldAi.url), start(options.old, 'worker', 'old-worker', oldAi.url)]);
    const oldApis = oldProcesses.filter((proc) => proc.kind === 'api');
    step('old release started (ai, 2 api, worker)');
    const balancer = new Balancer(deployment.publicUrl);
    balancer.route(oldApis);
    const { users, workload, email } = await setUp(balancer, sql, options.clients);
    step(`${options.clients} users signed up through the old API`);
    // Chunks as a deployment that has run for a while holds them: indexed before sql/0013, all of
    // generation 0. Those of per-document generations (indexed since) the previous release
    // searches slowly on a large workspace whatever the migration does, 1-2 s by sorting the
    // workspace (fixed in this release: chunk-search.ts, sameGeneration), which would hide what
    // is judged here, the migration's own effect.
    const data = await generateLargeData({ url: databaseUrl, sizes: options.sizes, organizationOf: email, name: 'upgrade', generation: 'zero', log });
    workload.large.id = data.workspaces[0]!.id;
    workload.small = data.workspaces.slice(1).map((workspace) => workspace.id);
    workload.queries = data.queries(200);
    workload.large.documentIds = await someDocuments(sql, workload.large.id);
    await checkGenerated(balancer, users[0]!, workload);
    step(`large data (${options.sizes.join(' + ')} chunks)`);

    // --- the four phases ------------------------------------------------------------------------------
    const timeline = {} as Timeline;
    let endLoad!: () => void;
    // Only the load is judged: the set-up's requests are forgotten.
    balancer.exchanges.length = 0;
    timeline.old = { from: balancer.now(), to: NaN };
    const load = runLoad(users, balancer, workload, new Promise<void>((resolve) => (endLoad = resolve)));
    await sleep(options.seconds.old * 1000);
    step('phase old');

    timeline.old.to = balancer.now();
    timeline.migrate = { from: timeline.old.to, to: NaN };
    const migrate = await runMigrate(options.new, deployment);
    timeline.migrate.to = balancer.now();
    step(`phase migrate (${migrate.applied.length ? migrate.applied.join(', ') : 'nothing to apply'})`);
    for (const line of migrate.output.split('\n').filter((text) => /"level":(4|5|6)0/.test(text))) log(`upgrade: migrate said: ${line.slice(0, 400)}`);
    const extra: string[] = [];
    const newProcesses: ServiceProcess[] = [];
    if (migrate.code !== 0) {
      // The release stops here, as a deployment would: the new processes would fail their own start.
      extra.push(`migrate: the new release's migrate exited ${migrate.code}: ${migrate.output.slice(-1500)}`);
      timeline.mixed = timeline.new = { from: timeline.migrate.to, to: timeline.migrate.to };
      endLoad();
      const verdict = await conclude({ sql, balancer, timeline, extra, running, log, step, counts: await load, workers: oldProcesses });
      return { verdict, timings, migrate: { applied: migrate.applied, ms: migrate.ms, output: migrate.output } };
    }

    timeline.mixed = { from: timeline.migrate.to, to: NaN };
    const newAi = await start(options.new, 'ai', 'new-ai');
    newProcesses.push(...(await Promise.all([start(options.new, 'api', 'new-api', newAi.url), start(options.new, 'worker', 'new-worker', newAi.url)])));
    const newApis = newProcesses.filter((proc) => proc.kind === 'api');
    balancer.route([...oldApis, ...newApis]);
    step('new release started (ai, api, worker)');
    await sleep(options.seconds.mixed * 1000);
    step('phase mixed');

    timeline.mixed.to = balancer.now();
    timeline.new = { from: timeline.mixed.to, to: NaN };
    balancer.route(newApis);
    // A balancer's deregistration delay: requests already sent to an old API are answered before it stops listening.
    await sleep(1_000);
    const exits = await Promise.all(oldProcesses.map(async (proc) => ({ proc, code: await proc.stop() })));
    const aiExit = await oldAi.stop();
    for (const { proc, code } of [...exits, { proc: oldAi, code: aiExit }]) {
      if (code !== 0) extra.push(`new: ${proc.label} exited ${code ?? proc.exit?.signal} after SIGTERM (a drained process exits 0)`);
    }
    step('old release stopped (SIGTERM, drained)');
    await sleep(options.seconds.new * 1000);
    timeline.new.to = balancer.now();
    endLoad();
    const counts = await load;
    step('phase new');
    const verdict = await conclude({ sql, balancer, timeline, extra, running, log, step, counts, workers: [...oldProcesses, ...newProcesses] });
    return { verdict, timings, migrate: { applied: migrate.applied, ms: migrate.ms, output: migrate.output } };
  } finally {
    await Promise.allSettled(running.map((proc) => proc.stop(10_000)));
    await sql.end({ timeout: 5 });
    await admin.unsafe(`drop database if exists ${options.database} with (force)`).catch(() => undefined);
    await admin.end({ timeout: 5 });
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** After the load: the jobs waited for, what the processes and the background migrations said, and the verdict. */
async function conclude(run: {
  sql: postgres.Sql;
  balancer: Balancer;
  timeline: Timeline;
  extra: string[];
  running: ServiceProcess[];
  log(line: string): void;
  step(name: string): void;
  counts: LoadCounts;
  workers: ServiceProcess[];
}): Promise<Verdict> {
  const { sql, counts, log } = run;
  const jobs = await settle(sql, counts.jobs, run.workers);
  run.step(`${jobs.length} jobs settled`);
  const extra = [...run.extra, ...counts.clientExceptions.map((exception) => `the load itself failed (a bug of the harness): ${exception}`)];
  const [reindexed] = await sql<{ n: number }[]>`select count(*)::int as n from jobs where created_by is null`;
  if (reindexed!.n > 0) log(`upgrade: note: the workers queued ${reindexed!.n} re-index jobs (chunks of another model than the AI service's?)`);
  for (const proc of run.running) for (const line of proc.errors) log(`upgrade: ${proc.label} logged an error: ${line}`);
  // The new release's background migrations (sql/0016 on), which its workers run under the load.
  const background = await sql<{ name: string; state: string; rowsDone: string; rowsTotal: string; lastError: string | null }[]>`
    select name, state, rows_done::text as "rowsDone", rows_total::text as "rowsTotal", last_error as "lastError" from background_migrations`.catch(() => []);
  for (const row of background) log(`upgrade: background migration ${row.name}: ${row.state}, ${row.rowsDone} of ${row.rowsTotal} rows${row.lastError ? `, last error: ${row.lastError}` : ''}`);
  log(`upgrade: ${counts.searches} searches, ${counts.uploads} uploads, ${counts.jobs.length} jobs`);
  return judge(run.balancer.exchanges, jobs, run.timeline, extra);
}

/**
 * The users: the first signs up and creates the organization; the others sign up and are made
 * members (a row in members, as an accepted invitation leaves: accepting one needs a verified
 * email, which would mean reading the verification mail); two workspaces made through the API.
 */
async function setUp(balancer: Balancer, sql: postgres.Sql, clients: number): Promise<{ users: LoadUser[]; workload: Workload; email: string }> {
  const post = async (path: string, body: unknown, token?: string) => {
    const response = await balancer.fetch(`${balancer.origin}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
    if (response.status !== 200) throw new Error(`POST ${path} answered ${response.status}: ${await response.text()}`);
    return (await response.json()) as { token?: string; id?: string; user?: { id: string } };
  };
  const run = Date.now().toString(36);
  const users: LoadUser[] = [];
  let organizationId = '';
  for (let index = 0; index < clients; index++) {
    const email = `upgrade-${run}-${index}@example.com`;
    const signedUp = await post('/api/auth/sign-up/email', { name: `Upgrade ${index}`, email, password: PASSWORD });
    users.push({ index, token: signedUp.token ?? '' });
    if (index === 0) organizationId = (await post('/api/auth/organization/create', { name: 'Upgrade', slug: `upgrade-${run}` }, signedUp.token)).id ?? '';
    else await sql`insert into members (id, organization_id, user_id, role) values (${newId('mem')}, ${organizationId}, ${signedUp.user!.id}, 'member')`;
  }
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${users[0]!.token}` };
  const workspace = async (slug: string) => {
    const response = await balancer.fetch(`${balancer.origin}/api/v1/workspaces`, { method: 'POST', headers, body: JSON.stringify({ organizationId, name: slug, slug }) });
    if (response.status !== 200) throw new Error(`workspaces.create answered ${response.status}: ${await response.text()}`);
    return ((await response.json()) as { id: string }).id;
  };
  const workload: Workload = { organizationId, large: { id: '', documentIds: [] }, small: [], uploads: await workspace('uploads'), scratch: await workspace('scratch'), queries: [] };
  return { users, workload, email: `upgrade-${run}-0@example.com` };
}

/** The generated data as the API shows it: a search of the large workspace finds chunks with citations, and a document is indexed with its text. */
async function checkGenerated(balancer: Balancer, user: LoadUser, workload: Workload): Promise<void> {
  const client = createClient({ baseUrl: balancer.origin, token: user.token, fetch: balancer.fetch, retries: 0 });
  const { results } = await client.documents.search({ workspaceId: workload.large.id, query: workload.queries[0]!, limit: 10 });
  if (results.length === 0 || !results[0]!.citation) throw new Error(`a search of the generated workspace found ${results.length} chunks (${JSON.stringify(results[0])})`);
  const document = await client.documents.get({ id: workload.large.documentIds[0]! });
  const text = await client.documents.text({ id: document.id });
  if (document.status !== 'ready' || !document.indexedAt || !document.chunkCount || !text?.text) throw new Error(`a generated document is not ready and indexed with a text: ${JSON.stringify(document)}`);
}

async function someDocuments(sql: postgres.Sql, workspaceId: string): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`select id from documents where workspace_id = ${workspaceId} order by id limit 200`;
  return rows.map((row) => row.id);
}

/** Waits until every created job has finished (or JOBS_SETTLE_MS passed); which process ran each one to success. */
async function settle(sql: postgres.Sql, created: { id: string; kind: string; at: number }[], workers: ServiceProcess[]): Promise<SettledJob[]> {
  const ids = created.map((job) => job.id);
  const deadline = performance.now() + JOBS_SETTLE_MS;
  let rows: { id: string; status: string; error: string | null }[] = [];
  for (;;) {
    rows = await sql<typeof rows>`select id, status, error_message as error from jobs where id = any(${ids}::text[])`;
    if (rows.every((row) => ['succeeded', 'failed', 'canceled'].includes(row.status)) || performance.now() > deadline) break;
    await sleep(500);
  }
  const byId = new Map(rows.map((row) => [row.id, row]));
  return created.map((job) => {
    const row = byId.get(job.id);
    const ranBy = workers.find((proc) => proc.succeededJobs.has(job.id))?.label ?? null;
    return {
      ...job,
      status: row ? (['succeeded', 'failed', 'canceled'].includes(row.status) ? row.status : `still ${row.status} after ${JOBS_SETTLE_MS / 1000} s`) : 'missing',
      error: row?.error ?? null,
      ranBy,
    };
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
