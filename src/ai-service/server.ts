/**
 * The companion AI service (decisions.md, "Companion AI service"): embeddings in OpenAI's shape,
 * text extraction from documents, and a health report, on a plain node:http server in a process
 * of its own (`main.ts ai`; `serve` starts it as a child). It listens on AI_HOST (loopback by
 * default) and, when AI_API_KEY is set, answers every route but `/health` only to requests that
 * carry that key as a bearer token: the API and its worker are its only callers.
 *
 *   GET  /health          → 200 HealthReport (ok false with problems when misconfigured)
 *   POST /v1/embeddings   → OpenAI embeddings (embeddings.ts, the model in embedder.ts)
 *   POST /v1/extract      → { text, pages } from the raw document bytes (extractor.ts: each
 *                           document parsed in a thread of its own, with memory and time limits)
 *
 * Extraction, OCR and embeddings wait in fair, bounded queues (fair-queue.ts): a request's
 * X-Payer-Id (else X-Organization-Id) says whose turn it takes, a full queue answers 503 with Retry-After, and a
 * caller that closes its connection before the answer has its work dropped.
 *
 * Each request runs in a SERVER span named by its route, a child of the caller's traceparent
 * (spans.ts; docs/ai-service.md "Traces").
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { isIP, type AddressInfo } from 'node:net';
import type { AiSettings } from '../config.ts';
import type { Logger } from '../logger.ts';
import { bearerMatches } from './api-key.ts';
import type { Embedder } from './embedder-interface.ts';
import { createEmbedder, type EmbedCall, type EmbedderStats, type QueuedEmbedder } from './embedder.ts';
import { EMBEDDINGS_BODY_LIMIT, createEmbeddings } from './embeddings.ts';
import { documentType } from './extraction.ts';
import { createExtractor, type ExtractorStats } from './extractor.ts';
import { healthReport } from './health.ts';
import { CALLER_GONE, HttpError, callerSignal, turnOf, purposeOf, readBody, readJson, sendError, sendJson } from './http-exchange.ts';
import { answered, callerWentAway, describeCall, inRequestSpan } from './spans.ts';
import type { Span } from '../telemetry/tracing.ts';

export interface AiServiceOptions {
  settings: AiSettings;
  /** Defaults to settings.host (AI_HOST). */
  host?: string;
  /** Defaults to settings.port (AI_PORT); 0 picks a free port. */
  port?: number;
  logger: Logger;
  /** The extraction queue's size (extractor.ts: THREADS, QUEUE_BOUNDS); tests make it small. */
  extraction?: { threads?: number; maxWaiting?: number; maxWaitingPerOrganization?: number };
}

/** What the queues hold now and have dropped or refused so far (fair-queue.ts), for tests and logs. */
export interface AiServiceStats extends ExtractorStats {
  /** The local model's batches; null with a provider. */
  embeddings: EmbedderStats | null;
}

export interface AiService {
  /** Where it listens, e.g. http://127.0.0.1:3001; a wildcard host is reported as loopback. */
  url: string;
  port: number;
  stats(): AiServiceStats;
  /** Stops accepting connections, lets requests in progress finish, then stops the model and parser threads. */
  close(): Promise<void>;
}

/** Who asks: the organization and a signal that aborts when the caller goes away. */
type Call = { organization: string | undefined; signal: AbortSignal };
/** Answers with a value or a promise of one (`unknown` covers both). */
type Handler = (request: IncomingMessage, call: Call) => unknown;

interface Route {
  handlers: Record<string, Handler>;
  /** Open to anyone who can reach the port: only the health report, which says nothing secret. */
  public?: boolean;
}

export async function startAiService(options: AiServiceOptions): Promise<AiService> {
  const { settings, logger: parent } = options;
  const logger = parent.child({ component: 'ai-service' });
  const embedder = createEmbedder(settings, logger);
  const extractor = createExtractor({ limits: settings.extraction, logger, nice: settings.threadNice, ...options.extraction });

  const routes: Record<string, Route> = {
    '/health': { public: true, handlers: { GET: () => healthReport(settings, extractor.ocr, embedder) } },
    '/v1/embeddings': {
      handlers: { POST: async (request, call) => createEmbeddings(await readJson(request, EMBEDDINGS_BODY_LIMIT), forCall(embedder, call)) },
    },
    '/v1/extract': {
      handlers: {
        POST: async (request, call) => {
          // The type first, so an unsupported document is refused before its bytes are read.
          const type = documentType(request.headers['content-type']);
          return extractor.extract(await readBody(request, settings.extraction.maxBytes), type, call);
        },
      },
    },
  };

  /**
   * Set by close(): from then on each answer ends its connection. close() waits for every
   * connection, and a keep-alive one still in use (a request in flight, or sent on it after
   * close()) would otherwise stay open until the client's own idle timeout, about 4 s for Node's
   * fetch (a stop just after the start took 3 s more).
   */
  let closing = false;
  const handle = async (request: IncomingMessage, response: ServerResponse, path: string, span: Span) => {
    const started = performance.now();
    let status = 200;
    let signal: AbortSignal | undefined;
    try {
      const route = routes[path];
      if (!route) throw new HttpError(404, `There is no route ${path}.`);
      // Before the method and the body: a caller without the key learns nothing else.
      if (!route.public && settings.apiKey && !bearerMatches(request.headers.authorization, settings.apiKey)) {
        throw new HttpError(401, 'A valid API key is required (Authorization: Bearer <AI_API_KEY>).', { headers: { 'www-authenticate': 'Bearer' } });
      }
      const handler = route.handlers[request.method ?? ''];
      const allowed = Object.keys(route.handlers).join(', ');
      if (!handler) throw new HttpError(405, `${path} accepts ${allowed}.`, { headers: { allow: allowed } });
      signal = callerSignal(response);
      const call = { organization: route.public ? undefined : turnOf(request), purpose: route.public ? undefined : purposeOf(request), signal };
      describeCall(span, request, call.purpose);
      const result = await handler(request, call);
      // Work that ended just as its caller left: there is nobody to answer.
      if (call.signal.aborted) throw call.signal.reason;
      if (closing) response.setHeader('connection', 'close');
      sendJson(response, 200, result);
      answered(span, null);
    } catch (caught) {
      // A caller gone while its body was still arriving breaks the read: that is not our failure.
      const error = signal?.aborted ? (signal.reason as HttpError) : caught instanceof HttpError ? caught : new HttpError(500, 'The AI service failed; try again later.', { cause: caught });
      status = error.status;
      if (status === CALLER_GONE) {
        callerWentAway(span);
        logger.info(
          { method: request.method, path, organization: request.headers['x-organization-id'], payer: request.headers['x-payer-id'], ms: Math.round(performance.now() - started) },
          'ai request dropped: the caller went away',
        );
        return;
      }
      if (status >= 500 || error.cause) logger[status >= 500 ? 'error' : 'warn']({ err: error.cause ?? error, path, status }, error.message);
      // An answer given before the body was read (401, 413, 415, 404...) closes the connection, so
      // node does not read and discard a large upload just to keep the connection alive.
      if (!request.complete || closing) response.setHeader('connection', 'close');
      sendError(response, error);
      answered(span, error);
    }
    logger[path === '/health' ? 'debug' : 'info']({ method: request.method, path, status, ms: Math.round(performance.now() - started) }, 'ai request');
  };

  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    // A caller's trace is continued only when it may use the service: the API and its worker.
    const trusted = () => !settings.apiKey || bearerMatches(request.headers.authorization, settings.apiKey);
    void inRequestSpan(request, Object.hasOwn(routes, path) ? path : undefined, trusted, (span) => handle(request, response, path, span));
  });
  const port = options.port ?? settings.port;
  const listenHost = options.host ?? settings.host;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, listenHost, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  const host = listenHost === '0.0.0.0' ? '127.0.0.1' : listenHost === '::' ? '::1' : listenHost;
  const url = `http://${isIP(host) === 6 ? `[${host}]` : host}:${bound}`;
  logger.info({ url, provider: settings.provider, model: embedder.model, ocr: extractor.ocr.description, apiKey: Boolean(settings.apiKey) }, 'AI service listening');

  return {
    url,
    port: bound,
    stats: () => ({ ...extractor.stats(), embeddings: embedder.stats() }),
    async close() {
      await new Promise<void>((resolve, reject) => {
        closing = true;
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeIdleConnections();
      });
      await Promise.all([extractor.close(), embedder.close()]);
    },
  };
}

/** The embedder as embeddings.ts sees it, taking this request's turn and signal. */
function forCall(embedder: QueuedEmbedder, call: EmbedCall): Embedder {
  return {
    model: embedder.model,
    problem: () => embedder.problem(),
    embed: (texts) => embedder.embed(texts, call),
    close: () => embedder.close(),
  };
}
