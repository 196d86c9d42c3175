/**
 * Typed RPC: `POST /rpc/<procedure with dots as slashes>` with `{ json, meta }` bodies both ways
 * (see rpc/wire.ts). The input is validated in its JSON form, then Dates are revived where meta
 * says. Errors use the same status and envelope as REST.
 */
import express, { type Request, type Response, type Router } from 'express';
import { procedures, type ProcedureDefinition, type ProcedureName } from '../../generated/procedures.ts';
import type { Handlers, Services } from '../context.ts';
import { decode, encode } from '../rpc/wire.ts';
import { ApiError, badRequest } from '../contract/errors.ts';
import { sendError } from './error-handler.ts';
import { callProcedure } from './procedure-call.ts';
import { callRequest } from './rest-transport.ts';
import { sendStream, type StreamHandlers } from './streams.ts';

const byPath = new Map<string, ProcedureDefinition>(
  Object.values(procedures).map((procedure) => [procedure.name.replace(/\./g, '/'), procedure]),
);

export function rpcRouter(handlers: Handlers, streams: StreamHandlers, services: Services): Router {
  const router = express.Router({ strict: true });
  router.all('/*path', async (req: Request, res: Response) => {
    const procedure = byPath.get(req.path.slice(1));
    try {
      if (!procedure) throw new ApiError('NOT_FOUND', { message: `No procedure at ${req.path}.` });
      if (req.method !== 'POST') {
        throw new ApiError('METHOD_NOT_ALLOWED', { message: 'RPC procedures are called with POST.', headers: { Allow: 'POST' } });
      }
      const input = rpcInput(req.body);
      if (procedure.produces === 'event-stream') {
        await sendStream(procedure, streams, input, req, res, services);
        return;
      }
      // Validate the JSON form (dates are ISO strings there), then revive Dates where meta says.
      const revive = (validated: Record<string, unknown>) => decode({ json: validated, meta: req.body?.meta }) as Record<string, unknown>;
      const output = await callProcedure(procedure, handlers[procedure.name as ProcedureName], input, callRequest(req), services, revive);
      res.status(procedure.successStatus).json(encode(output));
    } catch (error) {
      sendError(req, res, error, procedure?.errors);
    }
  });
  return router;
}

/** An empty body means an empty input; otherwise `{ json, meta? }` whose json is an object (returned as is). */
function rpcInput(body: unknown): Record<string, unknown> {
  // body-parser turns an empty body into {}.
  if (body === undefined || (isPlainObject(body) && Object.keys(body).length === 0)) return {};
  if (body === null || typeof body !== 'object' || Array.isArray(body) || !('json' in body)) {
    throw badRequest([{ path: [], message: 'the RPC body must be an object { json, meta? }' }]);
  }
  const { json } = body as { json: unknown };
  if (json === undefined || json === null) return {};
  if (typeof json !== 'object' || Array.isArray(json)) {
    throw badRequest([{ path: [], message: 'json must be an object holding the procedure input' }]);
  }
  return json as Record<string, unknown>;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
