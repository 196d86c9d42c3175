/**
 * REST under /api/v1: each operation of the generated procedure table (the one list of the
 * contract's operations, codegen/procedures.ts) is registered once as an Express route, so
 * matching is not rebuilt per request. Path and query strings are coerced to the
 * contract's scalar types, merged with the body into the procedure's one input object, and handed
 * to the binding layer.
 */
import express, { type Request, type Response, type Router } from 'express';
import { procedures, type InputField, type ProcedureDefinition, type ProcedureName } from '../../generated/procedures.ts';
import type { Handlers, Services } from '../context.ts';
import { badRequest, type ValidationIssue } from '../contract/errors.ts';
import { sendError } from './error-handler.ts';
import { invoke, type CallRequest } from './procedure-call.ts';
import { sendStream, type StreamHandlers } from './streams.ts';

export function restRouter(handlers: Handlers, streams: StreamHandlers, services: Services): Router {
  const router = express.Router({ strict: true });
  for (const procedure of Object.values(procedures) as ProcedureDefinition[]) {
    const method = procedure.method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete';
    router[method](toExpressPath(procedure.path), async (req: Request, res: Response) => {
      res.locals.procedure = procedure.name; // the metrics' label (call-metrics.ts)
      try {
        const call = { procedure, ...restInput(procedure, req), request: callRequest(req), services };
        if (procedure.produces === 'event-stream') {
          await sendStream(call, streams[procedure.name], req, res);
          return;
        }
        const output = await invoke<unknown>({ ...call, run: handlers[procedure.name as ProcedureName] });
        res.status(procedure.successStatus).json(output);
      } catch (error) {
        sendError(req, res, error, procedure);
      }
    });
  }
  return router;
}

/**
 * What the binding layer needs of the HTTP request, the same for REST and RPC: its id, log, client
 * address, caller, and the Idempotency-Key header (used by the procedures that declare it).
 */
export function callRequest(req: Request): CallRequest {
  return {
    requestId: req.id,
    log: req.log,
    ip: req.clientIp,
    principal: req.principal,
    idempotencyKey: req.get('Idempotency-Key'),
    // Set on the response before it is written, whether the kept answer is a success or an error.
    markReplayed: () => req.res?.setHeader('Idempotent-Replayed', 'true'),
  };
}

/** `/workspaces/{id}` -> `/workspaces/:id` */
export function toExpressPath(path: string): string {
  return path.replace(/\{([^}]+)\}/g, ':$1');
}

/**
 * Path, query and body as the procedure's one input object. Each field may come only from the
 * place the contract puts it: a query or body field that repeats a path parameter (or any query
 * parameter the operation does not declare) is an unknown field, as it would be over RPC. Keys
 * are copied as own data properties, so a `__proto__` key is an unknown field too, never a
 * prototype. Those fields come back as `refused`: the binding layer refuses them with the
 * validator's issues (400, after the 401 check).
 */
export function restInput(procedure: ProcedureDefinition, req: Request): { input: Record<string, unknown>; refused: ValidationIssue[] } {
  const input: Record<string, unknown> = {};
  const refused: ValidationIssue[] = [];
  if (procedure.hasBody && req.body !== undefined) {
    if (req.body === null || typeof req.body !== 'object' || Array.isArray(req.body)) {
      throw badRequest([{ path: [], message: 'the request body must be a JSON object' }]);
    }
    for (const [name, value] of Object.entries(req.body as Record<string, unknown>)) {
      if (procedure.fields.some((f) => f.name === name && f.in !== 'body')) refused.push({ path: [name], message: 'is not a known field' });
      else setOwn(input, name, value);
    }
  } else if (!procedure.hasBody && hasContent(req)) {
    throw badRequest([{ path: [], message: 'this operation takes no request body' }]);
  }
  for (const [name, value] of Object.entries(req.query)) {
    const field = procedure.fields.find((f) => f.name === name && f.in === 'query');
    if (field) setOwn(input, name, coerce(field, value));
    else refused.push({ path: [name], message: 'is not a known field' });
  }
  for (const [name, value] of Object.entries(req.params)) {
    const field = procedure.fields.find((f) => f.name === name && f.in === 'path');
    if (field) setOwn(input, name, coerce(field, value));
  }
  return { input, refused };
}

function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function hasContent(req: Request): boolean {
  return req.body !== undefined && !(typeof req.body === 'object' && req.body !== null && Object.keys(req.body as object).length === 0);
}

/** Query and path values arrive as strings; the contract says which are numbers or booleans. */
function coerce(field: InputField, value: unknown): unknown {
  if (typeof value !== 'string') return value;
  switch (field.type) {
    case 'integer':
    case 'number':
      return /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value;
    case 'boolean':
      return value === 'true' ? true : value === 'false' ? false : value;
    default:
      return value;
  }
}
