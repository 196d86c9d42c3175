/**
 * The companion AI service (decisions.md, "Companion AI service"): embeddings in OpenAI's shape,
 * text extraction from documents, and a health report, on a plain node:http server. It has no
 * authentication and listens on loopback by default; only the API and its worker call it.
 *
 *   GET  /health          → 200 HealthReport (ok false with problems when misconfigured)
 *   POST /v1/embeddings   → OpenAI embeddings (embeddings.ts)
 *   POST /v1/extract      → { text, pages } from the raw document bytes (extraction.ts)
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { isIP, type AddressInfo } from 'node:net';
import type { AiSettings } from '../config.ts';
import type { Logger } from '../logger.ts';
import { EMBEDDINGS_BODY_LIMIT, createEmbeddings } from './embeddings.ts';
import { EXTRACT_BODY_LIMIT, documentType, extract } from './extraction.ts';
import { healthReport } from './health.ts';
import { HttpError, readBody, readJson, sendError, sendJson } from './http-exchange.ts';
import { createOcrEngine } from './ocr.ts';

export interface AiServiceOptions {
  settings: AiSettings;
  host: string;
  /** Defaults to settings.port (AI_PORT); 0 picks a free port. */
  port?: number;
  logger: Logger;
  /** The largest document `/v1/extract` reads, in bytes; default 26 MiB (MAX_UPLOAD_BYTES' default plus room). */
  maxExtractBytes?: number;
}

export interface AiService {
  /** Where it listens, e.g. http://127.0.0.1:3001; a wildcard host is reported as loopback. */
  url: string;
  port: number;
  /** Stops accepting connections, lets requests in progress finish, then stops the OCR worker. */
  close(): Promise<void>;
}

type Handler = (request: IncomingMessage) => Promise<unknown> | unknown;

export async function startAiService(options: AiServiceOptions): Promise<AiService> {
  const { settings, logger: parent } = options;
  const logger = parent.child({ component: 'ai-service' });
  const ocr = createOcrEngine(logger);
  const maxExtractBytes = options.maxExtractBytes ?? EXTRACT_BODY_LIMIT;

  const routes: Record<string, Record<string, Handler>> = {
    '/health': { GET: () => healthReport(settings, ocr) },
    '/v1/embeddings': {
      POST: async (request) => createEmbeddings(await readJson(request, EMBEDDINGS_BODY_LIMIT), settings, logger),
    },
    '/v1/extract': {
      POST: async (request) => {
        // The type first, so an unsupported document is refused before its bytes are read.
        const type = documentType(request.headers['content-type']);
        return extract(await readBody(request, maxExtractBytes), type, ocr);
      },
    },
  };

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const started = performance.now();
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    let status = 200;
    try {
      const route = routes[path];
      if (!route) throw new HttpError(404, `There is no route ${path}.`);
      const handler = route[request.method ?? ''];
      if (!handler) throw new HttpError(405, `${path} accepts ${Object.keys(route).join(', ')}.`, { headers: { allow: Object.keys(route).join(', ') } });
      sendJson(response, 200, await handler(request));
    } catch (caught) {
      const error = caught instanceof HttpError ? caught : new HttpError(500, 'The AI service failed; try again later.', { cause: caught });
      status = error.status;
      if (status >= 500 || error.cause) logger[status >= 500 ? 'error' : 'warn']({ err: error.cause ?? error, path, status }, error.message);
      // An answer given before the body was read (413, 415, 404...) closes the connection, so
      // node does not read and discard a large upload just to keep the connection alive.
      if (!request.complete) response.setHeader('connection', 'close');
      sendError(response, error);
    }
    logger[path === '/health' ? 'debug' : 'info']({ method: request.method, path, status, ms: Math.round(performance.now() - started) }, 'ai request');
  };

  const server = createServer((request, response) => void handle(request, response));
  const port = options.port ?? settings.port;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  const host = options.host === '0.0.0.0' ? '127.0.0.1' : options.host === '::' ? '::1' : options.host;
  const url = `http://${isIP(host) === 6 ? `[${host}]` : host}:${bound}`;
  logger.info({ url, provider: settings.provider, ocr: ocr.description }, 'AI service listening');

  return {
    url,
    port: bound,
    async close() {
      await new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeIdleConnections();
      });
      await ocr.close();
    },
  };
}
