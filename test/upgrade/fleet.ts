/**
 * The processes of an upgrade (docs/deploying.md, "The processes"): `api` (WORKER=off), `worker`
 * and `ai`, each `node src/main.ts <command>` started from a release's tree with that tree's own
 * Node (node_modules/.bin/node), and the release's `migrate`. Settings every process shares are
 * the deployment's (`shared` below); each kind adds its own. Their JSON log lines are read as they
 * come: error-level lines are kept, and a worker's `job succeeded` lines say which release ran
 * which job.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { SERVICE_NODE_FLAGS } from '../../src/process/node-flags.ts';
import { freePort } from '../support/ports.ts';

/** A tree of the service: the working tree, or the previous release unpacked beside it. */
export interface Release {
  /** `old` or `new`: the side of the upgrade. */
  name: string;
  dir: string;
}

export type Kind = 'api' | 'worker' | 'ai';

export interface ServiceProcess {
  /** e.g. `old-api-1` */
  label: string;
  release: Release;
  kind: Kind;
  /** The API's own address (api), the AI service's (ai). */
  url: string;
  /** Error-level log lines (pino level 50 and above), the first 20. */
  errors: string[];
  /** Ids of the jobs this process ran to success (workers). */
  succeededJobs: Set<string>;
  exit: { code: number | null; signal: string | null } | undefined;
  /** SIGTERM, then waits for the exit (SIGKILL after `graceMs`); the exit code, null when killed. */
  stop(graceMs?: number): Promise<number | null>;
}

const READY_TIMEOUT_MS = 90_000;

/** The settings of a deployment that every process shares, and the address its APIs are reached at. */
export interface Deployment {
  databaseUrl: string;
  /** Local storage: the same directory for every process, as a shared volume (or one bucket) would be. */
  dataDir: string;
  /** PUBLIC_URL of every API: the load balancer's address (balancer.ts), which signed upload URLs name. */
  publicUrl: string;
  secret: string;
  aiApiKey: string;
}

/** This process's environment without what is the test's own (vitest's, the suites' database settings), then the deployment's settings and `own`. */
function serviceEnv(deployment: Deployment, own: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of Object.keys(env)) if (/^(VITEST|TEST_|UPGRADE_|DATABASE_)/.test(key)) delete env[key];
  return { ...env, ...shared(deployment), ...own };
}

function shared(deployment: Deployment): NodeJS.ProcessEnv {
  return {
    NODE_ENV: 'production',
    DATABASE_URL: deployment.databaseUrl,
    DATA_DIR: deployment.dataDir,
    PUBLIC_URL: deployment.publicUrl,
    SECRET: deployment.secret,
    METRICS_TOKEN: 'upgrade-metrics-token',
    AI_API_KEY: deployment.aiApiKey,
    EMAIL_PROVIDER: 'log',
    // Every client is 127.0.0.1: the per-IP limits would count them as one.
    RATE_LIMIT_PER_MINUTE: '1000000',
    AUTH_RATE_LIMIT_PER_MINUTE: '1000000',
    // Workers say which jobs they ran (info); APIs log only what went wrong.
    LOG_LEVEL: 'warn',
  };
}

/** Starts one process and resolves once it serves: /readyz (api), /health (ai), `job worker started` (worker). */
export async function startProcess(release: Release, kind: Kind, label: string, deployment: Deployment, aiUrl: string | undefined): Promise<ServiceProcess> {
  const port = await freePort();
  const own: Record<Kind, NodeJS.ProcessEnv> = {
    api: { HOST: '127.0.0.1', PORT: String(port), WORKER: 'off', AI_URL: aiUrl },
    worker: { AI_URL: aiUrl, LOG_LEVEL: 'info' },
    ai: { AI_HOST: '127.0.0.1', AI_PORT: String(port) },
  };
  const env = serviceEnv(deployment, own[kind]);
  const url = kind === 'worker' ? '' : `http://127.0.0.1:${port}`;
  const child = spawn(join(release.dir, 'node_modules/.bin/node'), [...SERVICE_NODE_FLAGS, 'src/main.ts', kind], { cwd: release.dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const proc = watch(child, { label, release, kind, url });
  const deadline = performance.now() + READY_TIMEOUT_MS;
  let workerStarted = false;
  proc.onLine((entry) => {
    if (entry.msg === 'job worker started') workerStarted = true;
  });
  for (;;) {
    if (proc.exit) throw new Error(`${label} exited (${proc.exit.code ?? proc.exit.signal}) while starting: ${proc.stderr().slice(-1500) || proc.errors.join('\n')}`);
    const ready =
      kind === 'worker'
        ? workerStarted
        : await fetch(`${url}${kind === 'api' ? '/readyz' : '/health'}`).then(
            (response) => response.status === 200,
            () => false,
          );
    if (ready) return proc;
    if (performance.now() > deadline) {
      await proc.stop(1_000);
      throw new Error(`${label} was not ready within ${READY_TIMEOUT_MS / 1000} s`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The release's `node src/main.ts migrate`, to its end: its exit code, how long it ran, and its output. */
export async function runMigrate(release: Release, deployment: Deployment): Promise<{ code: number | null; ms: number; output: string; applied: string[] }> {
  const env = serviceEnv(deployment, { LOG_LEVEL: 'info' });
  const started = performance.now();
  const child = spawn(join(release.dir, 'node_modules/.bin/node'), ['src/main.ts', 'migrate'], { cwd: release.dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const [code] = (await once(child, 'close')) as [number | null];
  const applied: string[] = [];
  for (const line of output.split('\n')) {
    try {
      const entry = JSON.parse(line) as { msg?: unknown; migration?: unknown };
      if (entry.msg === 'migration applied' && typeof entry.migration === 'string') applied.push(entry.migration);
    } catch {
      // not a log line
    }
  }
  return { code, ms: performance.now() - started, output, applied };
}

interface Watched extends ServiceProcess {
  onLine(listener: (entry: Record<string, unknown>) => void): void;
  stderr(): string;
}

function watch(child: ChildProcess, identity: Pick<ServiceProcess, 'label' | 'release' | 'kind' | 'url'>): Watched {
  const listeners: ((entry: Record<string, unknown>) => void)[] = [];
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-8000)));
  const closed = once(child, 'close') as Promise<[number | null, NodeJS.Signals | null]>;
  const proc: Watched = {
    ...identity,
    errors: [],
    succeededJobs: new Set(),
    exit: undefined,
    onLine: (listener) => listeners.push(listener),
    stderr: () => stderr,
    async stop(graceMs = 30_000) {
      if (!proc.exit) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await closed;
        clearTimeout(timer);
      }
      return proc.exit!.code;
    },
  };
  void closed.then(([code, signal]) => (proc.exit = { code, signal }));
  createInterface({ input: child.stdout! }).on('line', (line) => {
    let entry: Record<string, unknown>;
    try {
      entry = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    if (Number(entry.level) >= 50 && proc.errors.length < 20) proc.errors.push(line.slice(0, 600));
    if (entry.msg === 'job succeeded' && typeof entry.jobId === 'string') proc.succeededJobs.add(entry.jobId);
    for (const listener of listeners) listener(entry);
  });
  return proc;
}
