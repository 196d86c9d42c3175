/**
 * What the soak's clients measure (bench/soak.ts): every HTTP request goes through one `fetch`
 * that reads the whole answer and records its status and latency (request sent to body read), or
 * the network error. Requests of the measured load are counted in one-second buckets from its
 * start, so any window (each minute, the first and last third) is summed afterwards. An event
 * stream counts its opening only: it is neither a request per second nor a latency.
 */
import { percentile } from './support.ts';

interface Bucket {
  requests: number;
  latencies: number[];
  serverErrors: number;
  networkErrors: number;
}

export interface WindowFigures {
  requests: number;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
  serverErrors: number;
  networkErrors: number;
}

/** One failed request, kept for the report (the first few only). */
export interface Failure {
  op: string;
  status: number | 'network';
  detail: string;
}

const NULL_BODY = new Set([101, 204, 205, 304]);
const KEPT_FAILURES = 20;

export class Recorder {
  /** Per operation and outcome (`200`, `409 CONFLICT`, `network`), every phase included. */
  readonly outcomes = new Map<string, Map<string, number>>();
  readonly failures: Failure[] = [];
  serverErrors = 0;
  networkErrors = 0;
  private buckets: Bucket[] = [];
  private loadStart: number | undefined;

  /** From now on requests are counted in the load's buckets (second 0 is now). */
  startLoad(): void {
    this.loadStart = performance.now();
    this.buckets = [];
  }

  stopLoad(): void {
    this.loadStart = undefined;
  }

  /** Sums the buckets of seconds [from, to) of the load. */
  window(from: number, to: number): WindowFigures {
    let requests = 0;
    let serverErrors = 0;
    let networkErrors = 0;
    const latencies: number[] = [];
    for (let second = Math.floor(from); second < Math.ceil(to); second++) {
      const bucket = this.buckets[second];
      if (!bucket) continue;
      requests += bucket.requests;
      serverErrors += bucket.serverErrors;
      networkErrors += bucket.networkErrors;
      for (const latency of bucket.latencies) latencies.push(latency);
    }
    const seconds = to - from;
    return {
      requests,
      seconds,
      rps: requests / seconds,
      serverErrors,
      networkErrors,
      p50: latencies.length ? percentile(latencies, 50) : NaN,
      p99: latencies.length ? percentile(latencies, 99) : NaN,
    };
  }

  /** A drop-in `fetch` for the generated client and the signed PUT. */
  readonly fetch: typeof fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const op = operationOf(init?.method ?? 'GET', url.pathname);
    const started = performance.now();
    let response: Response;
    let body: ArrayBuffer;
    try {
      response = await fetch(input, init);
      if (response.headers.get('content-type')?.startsWith('text/event-stream')) {
        this.outcome(op, response.status, response.ok ? '' : 'stream refused');
        return response;
      }
      body = await response.arrayBuffer();
    } catch (error) {
      if (!init?.signal?.aborted) this.networkError(op, error, started);
      throw error;
    }
    this.request(op, response, performance.now() - started, body);
    return new Response(NULL_BODY.has(response.status) ? null : body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };

  private bucket(at: number): Bucket | undefined {
    if (this.loadStart === undefined) return undefined;
    const second = Math.floor((at - this.loadStart) / 1000);
    if (second < 0) return undefined;
    return (this.buckets[second] ??= { requests: 0, latencies: [], serverErrors: 0, networkErrors: 0 });
  }

  private request(op: string, response: Response, latency: number, body: ArrayBuffer): void {
    const { status } = response;
    const code = status >= 400 ? errorCode(body) : '';
    this.outcome(op, status, code);
    const bucket = this.bucket(performance.now());
    if (bucket) {
      bucket.requests++;
      bucket.latencies.push(latency);
    }
    if (status >= 500) {
      this.serverErrors++;
      if (bucket) bucket.serverErrors++;
      this.keep({ op, status, detail: `request id ${response.headers.get('x-request-id')}: ${new TextDecoder().decode(body).slice(0, 300)}` });
    }
  }

  private networkError(op: string, error: unknown, started: number): void {
    this.count(op, 'network');
    this.networkErrors++;
    const bucket = this.bucket(started);
    if (bucket) bucket.networkErrors++;
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    this.keep({ op, status: 'network', detail: `${(error as Error).message}${cause ? `: ${cause.code ?? ''} ${cause.message ?? ''}` : ''}` });
  }

  private outcome(op: string, status: number, code: string): void {
    this.count(op, code ? `${status} ${code}` : String(status));
  }

  private count(op: string, outcome: string): void {
    const byOutcome = this.outcomes.get(op) ?? new Map<string, number>();
    this.outcomes.set(op, byOutcome);
    byOutcome.set(outcome, (byOutcome.get(outcome) ?? 0) + 1);
  }

  private keep(failure: Failure): void {
    if (this.failures.length < KEPT_FAILURES) this.failures.push(failure);
  }
}

/** `/rpc/jobs/create` → `jobs.create`; REST and other paths by method and path, ids as `{id}`. */
export function operationOf(method: string, path: string): string {
  if (path.startsWith('/rpc/')) return path.slice(5).replaceAll('/', '.');
  if (path.startsWith('/uploads/')) return `${method} /uploads`;
  return `${method} ${path.replace(/\/[a-z]+_[a-z0-9]+(?=\/|$)/g, '/{id}')}`;
}

/** The `code` of an error body (procedure envelope), or the transport's `error` identifier. */
function errorCode(body: ArrayBuffer): string {
  try {
    const parsed = JSON.parse(new TextDecoder().decode(body)) as { code?: unknown; error?: unknown; json?: { code?: unknown } };
    const code = parsed.code ?? parsed.json?.code ?? parsed.error;
    return typeof code === 'string' ? code : '';
  } catch {
    return '';
  }
}
