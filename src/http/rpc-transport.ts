/**
 * Typed RPC: `POST /rpc/<procedure with dots as slashes>` with `{ json, meta }` bodies both ways
 * (see rpc/wire.ts). The input is validated in its JSON form, then Dates are revived where meta
 * says. Errors use the same status and envelope as REST.
 */
import express, { type Request, type Response, type Router } from 'express';
import { procedures, type ProcedureDefinition, type ProcedureName } from '../../generated/procedures.ts';
import type { Handlers, Services } from '../context.ts';
import { decode, encode } from '../rpc/wire.ts';
import { ApiError, badRequest, type ValidationIssue } from '../contract/errors.ts';
import { sendError } from './error-handler.ts';
import { invoke } from './procedure-call.ts';
import { callRequest } from './rest-transport.ts';
import { sendStream, type StreamHandlers } from './streams.ts';

const byPath = new Map<string, ProcedureDefinition>(Object.values(procedures).map((procedure) => [procedure.name.replace(/\./g, '/'), procedure]));

export function rpcRouter(handlers: Handlers, streams: StreamHandlers, services: Services): Router {
  const router = express.Router({ strict: true });
  router.all('/*path', async (req: Request, res: Response) => {
    const procedure = byPath.get(req.path.slice(1));
    if (procedure) res.locals.procedure = procedure.name; // the metrics' label (call-metrics.ts)
    try {
      if (!procedure) throw new ApiError('NOT_FOUND', { message: `No procedure at ${req.path}.` });
      if (req.method !== 'POST') {
        throw new ApiError('METHOD_NOT_ALLOWED', { message: 'RPC procedures are called with POST.', headers: { Allow: 'POST' } });
      }
      const input = rpcInput(req.body);
      const request = callRequest(req);
      if (procedure.produces === 'event-stream') {
        await sendStream({ procedure, input, request, services }, streams[procedure.name], req, res);
        return;
      }
      // Validate the JSON form (dates are ISO strings there), then revive Dates where meta says,
      // and only at the paths the contract declares date-time.
      const meta = (req.body as { meta?: unknown } | undefined)?.meta;
      const refused = metaIssues(procedure, meta);
      const revive = (validated: Record<string, unknown>) => decode({ json: validated, meta }) as Record<string, unknown>;
      const output = await invoke<unknown>({ procedure, input, refused, request, services, revive, run: handlers[procedure.name as ProcedureName] });
      res.status(procedure.successStatus).json(encode(output));
    } catch (error) {
      sendError(req, res, error, procedure);
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
  const { json } = body;
  if (json === undefined || json === null) return {};
  if (typeof json !== 'object' || Array.isArray(json)) {
    throw badRequest([{ path: [], message: 'json must be an object holding the procedure input' }]);
  }
  return json as Record<string, unknown>;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * RPC meta may mark as a Date only what the contract declares `format: date-time` (the row's
 * dateInputs): anything else would re-type a validated field after validation, past its pattern
 * and length checks. Each refused entry is a 400 issue at `meta`.
 */
function metaIssues(procedure: ProcedureDefinition, meta: unknown): ValidationIssue[] {
  if (meta === undefined) return [];
  if (!Array.isArray(meta)) return [{ path: ['meta'], message: 'must be an array of ["date", path] entries' }];
  const issues: ValidationIssue[] = [];
  meta.forEach((entry, index) => {
    const path = Array.isArray(entry) && entry[0] === 'date' && Array.isArray(entry[1]) ? (entry[1] as unknown[]) : null;
    if (!path || !procedure.dateInputs.some((declared) => matches(declared, path))) {
      issues.push({ path: ['meta', index], message: 'names no date-time field of the input' });
    }
  });
  return issues;
}

function matches(declared: readonly string[], path: unknown[]): boolean {
  return declared.length === path.length && declared.every((key, i) => (key === '*' ? typeof path[i] === 'string' || typeof path[i] === 'number' : key === path[i]));
}
