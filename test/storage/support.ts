/** Shared by the storage tests: the upload routes on a bare Express app, and header parsing. */
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import express, { type ErrorRequestHandler } from 'express';
import { createLogger } from '../../src/logger.ts';
import { requestId } from '../../src/http/request-id.ts';
import { LocalDriver } from '../../src/storage/local-driver.ts';
import { uploadRoutes, type UploadRoutesOptions } from '../../src/storage/upload-routes.ts';

/** The two parameters as a client reads them: the quoted fallback and the decoded filename*. */
export function parseDisposition(header: string): { type: string; filename: string; filenameStar: string } {
  const match = /^(attachment|inline); filename="((?:[^"\\]|\\.)*)"; filename\*=UTF-8''([A-Za-z0-9!#$&+\-.^_`|~%]+)$/.exec(header);
  if (!match) throw new Error(`not a well-formed Content-Disposition: ${header}`);
  return { type: match[1]!, filename: match[2]!, filenameStar: decodeURIComponent(match[3]!) };
}

export interface UploadApp {
  origin: string;
  /** Every pino line the routes wrote, parsed. */
  logs: Record<string, any>[];
  driver: LocalDriver;
  server: Server;
  close(): Promise<void>;
}

/**
 * The routes on 127.0.0.1:0 with only the request-id middleware in front (as in app.ts) and a
 * plain 500 handler behind. Express's default ETag setting is left on, so "no ETag" is the
 * route's own doing.
 */
export async function startUploadApp(options: { dataDir: string; secret: string } & Omit<UploadRoutesOptions, 'driver' | 'secret'>): Promise<UploadApp> {
  const app = express();
  const server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const driver = new LocalDriver({ dataDir: options.dataDir, publicUrl: origin, secret: options.secret });
  const onError: ErrorRequestHandler = (error, req, res, _next) => {
    req.log.error({ err: error }, 'internal error');
    res.status(500).json({ error: 'internal_error', requestId: req.id });
  };
  const logs: Record<string, any>[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) logs.push(JSON.parse(line));
      done();
    },
  });
  app.use(requestId(createLogger('info', sink)));
  app.use(uploadRoutes({ ...options, driver }));
  app.use(onError);
  return {
    origin,
    logs,
    driver,
    server,
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
