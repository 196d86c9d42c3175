/**
 * The load balancer in front of the APIs, as a `fetch` for the clients: every API's PUBLIC_URL is
 * `origin`, and each request to it goes to the next API in rotation, like a round-robin balancer
 * would send it (signed upload URLs name `origin` too, so the PUT also lands on any API). Taking
 * APIs out of the rotation before stopping them is the balancer's deregistration. Every exchange
 * is recorded whole: which API answered, when it was sent and answered, the status and error code,
 * or the transport error.
 */
import { operationOf } from '../../bench/soak-record.ts';
import type { ServiceProcess } from './fleet.ts';

export interface Exchange {
  op: string;
  /** The API's label (`old-api-1`). */
  target: string;
  /** ms since the balancer was made */
  start: number;
  end: number;
  /** The HTTP status, or `transport` when no answer came (refused, reset, timed out). */
  status: number | 'transport';
  /** The error code of a 4xx/5xx body, or the transport error's. */
  code: string;
  detail: string;
}

/** A request not answered in this time counts as a transport error (a client's own deadline). */
const CLIENT_TIMEOUT_MS = 30_000;
const NULL_BODY = new Set([101, 204, 205, 304]);

export class Balancer {
  readonly origin: string;
  readonly exchanges: Exchange[] = [];
  readonly t0 = performance.now();
  private targets: ServiceProcess[] = [];
  private turn = 0;

  constructor(origin: string) {
    this.origin = origin;
  }

  /** The APIs new requests go to from now on. */
  route(targets: ServiceProcess[]): void {
    this.targets = [...targets];
  }

  get routed(): readonly ServiceProcess[] {
    return this.targets;
  }

  now(): number {
    return performance.now() - this.t0;
  }

  readonly fetch: typeof fetch = async (input, init) => {
    const requested = new URL(input instanceof Request ? input.url : String(input));
    if (requested.origin !== this.origin || this.targets.length === 0) throw new Error(`the balancer has no API for ${requested.href}`);
    const target = this.targets[this.turn++ % this.targets.length]!;
    const url = `${target.url}${requested.pathname}${requested.search}`;
    const op = operationOf(init?.method ?? (input instanceof Request ? input.method : 'GET'), requested.pathname);
    const start = this.now();
    const signal = init?.signal ? AbortSignal.any([init.signal, AbortSignal.timeout(CLIENT_TIMEOUT_MS)]) : AbortSignal.timeout(CLIENT_TIMEOUT_MS);
    let response: Response;
    let body: ArrayBuffer;
    try {
      response = await fetch(input instanceof Request ? new Request(url, input) : url, { ...init, signal });
      body = await response.arrayBuffer();
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      this.exchanges.push({
        op,
        target: target.label,
        start,
        end: this.now(),
        status: 'transport',
        code: cause?.code ?? (error as Error).name,
        detail: `${(error as Error).message}${cause?.message ? `: ${cause.message}` : ''}`,
      });
      throw error;
    }
    const text = response.status >= 400 ? new TextDecoder().decode(body) : '';
    this.exchanges.push({ op, target: target.label, start, end: this.now(), status: response.status, code: errorCode(text), detail: text.slice(0, 300) });
    return new Response(NULL_BODY.has(response.status) ? null : body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

/** The `code` of an error body (the procedures' envelope, RPC's `{ json }`, or identity's `error`). */
function errorCode(text: string): string {
  if (!text) return '';
  try {
    const parsed = JSON.parse(text) as { code?: unknown; error?: unknown; json?: { code?: unknown } };
    const code = parsed.code ?? parsed.json?.code ?? parsed.error;
    return typeof code === 'string' ? code : '';
  } catch {
    return '';
  }
}
