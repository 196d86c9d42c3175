/**
 * Server-sent events for streaming procedures (jobs.stream), on both transports. The call takes
 * the binding layer's one path (401, 400, 404/403, 501); the stream handler then writes events through
 * a sink that knows nothing about Express. With response validation on, every event is checked
 * against the contract like any answer: the message `{ event, id?, data }` against the component
 * the route row names for that event (`procedure.events`, which codegen reads from the `oneOf` of
 * the procedure's `text/event-stream` answer). An event the contract does not declare is refused.
 */
import type { Request, Response } from 'express';
import type { Context, EventSink, StreamHandler } from '../context.ts';
import { enforceAccess } from '../auth/access.ts';
import { sessionStillValid } from '../auth/sessions.ts';
import { ApiError } from '../contract/errors.ts';
import type { ProcedureDefinition } from '../contract/procedure-definition.ts';
import { schemaValidator, type ValidateFunction } from '../contract/validators.ts';
import { checkAnswer, invoke, NO_BODY, type Call } from './procedure-call.ts';

export type { EventSink, StreamHandler, StreamHandlers } from '../context.ts';

export async function sendStream(call: Omit<Call<void>, 'run' | 'body'>, handler: StreamHandler | undefined, req: Request, res: Response): Promise<void> {
  const validate = call.services.config.validateResponses;
  await invoke<void>({
    ...call,
    body: () => NO_BODY,
    run:
      handler &&
      (async (input: Record<string, unknown>, ctx: Context<unknown>) => {
        const authorized = () => stillAuthorized(call.procedure, input, ctx);
        const sink = openStream(call.procedure.successStatus, req, res, validate ? checkEvent(call.procedure) : undefined, authorized);
        try {
          await handler(input, ctx, sink);
        } finally {
          if (!res.writableEnded) sink.close();
        }
      }),
  });
}

/** Per procedure, the validator of each event's message (built on the first stream). */
const eventValidators = new Map<string, Map<string, ValidateFunction>>();

function validatorsOf(procedure: Pick<ProcedureDefinition, 'name' | 'events'>): Map<string, ValidateFunction> {
  let validators = eventValidators.get(procedure.name);
  if (validators) return validators;
  validators = new Map();
  for (const [event, component] of Object.entries(procedure.events ?? {})) {
    const validate = schemaValidator(component);
    if (!validate) throw new Error(`${procedure.name}: no validator for ${component}, the message of its event ${event}: run make codegen`);
    validators.set(event, validate);
  }
  eventValidators.set(procedure.name, validators);
  return validators;
}

function checkEvent(procedure: Pick<ProcedureDefinition, 'name' | 'events'>): (event: string, data: unknown, id: string | undefined) => void {
  const validators = validatorsOf(procedure);
  return (event, data, id) => {
    const validate = validators.get(event);
    if (!validate) throw new Error(`${procedure.name} sent the event ${event}, which its contract does not declare`);
    checkAnswer(`${procedure.name} (event ${event})`, validate, id === undefined ? { event, data } : { event, id, data });
  };
}

/**
 * A client that stops reading is cut once this much is queued for it, rather than buffered
 * without bound; it reconnects with Last-Event-Id and resumes where it was.
 */
const MAX_BUFFERED_BYTES = 1024 * 1024;

/**
 * The stream's authorization, again: the session (by id: the token is not kept) and the declared
 * access through the same `enforceAccess` as at the start. A refusal (401, 403, 404) is false;
 * anything else (the database unreachable) throws, and the stream decides what to do.
 */
async function stillAuthorized(procedure: ProcedureDefinition, input: Record<string, unknown>, ctx: Context<unknown>): Promise<boolean> {
  const { principal, services } = ctx;
  if (!principal) return procedure.access === 'public';
  if (!(await sessionStillValid(services.db.sql, principal.sessionId, principal.userId, services.now()))) return false;
  try {
    await enforceAccess(procedure.access, input, principal, services);
    return true;
  } catch (error) {
    if (error instanceof ApiError && ['UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND'].includes((error as ApiError).code)) return false;
    throw error;
  }
}

/** Starts the 200 event-stream answer once the call is admitted. */
function openStream(status: number, req: Request, res: Response, check: ((event: string, data: unknown, id: string | undefined) => void) | undefined, authorized: () => Promise<boolean>): EventSink {
  const controller = new AbortController();
  res.status(status);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  // The response's close, not the request's: a POST (RPC) whose body was read has already fired
  // the request's before the stream opens, and its stream would then outlive the client.
  res.on('close', () => controller.abort());
  const write = (text: string) => {
    if (controller.signal.aborted) return;
    res.write(text);
    if (res.writableLength > MAX_BUFFERED_BYTES) {
      req.log.warn({ bufferedBytes: res.writableLength }, 'event stream cut: the client is not reading');
      controller.abort();
      res.destroy();
    }
  };
  return {
    send(event, data, id) {
      if (controller.signal.aborted) return;
      check?.(event, data, id);
      write(`event: ${event}\n${id === undefined ? '' : `id: ${id}\n`}data: ${JSON.stringify(data)}\n\n`);
    },
    comment(text) {
      write(`: ${text.replace(/[\r\n]/g, ' ')}\n\n`);
    },
    retry(ms) {
      write(`retry: ${Math.max(0, Math.trunc(ms))}\n\n`);
    },
    close() {
      controller.abort();
      if (!res.writableEnded && !res.destroyed) res.end();
    },
    authorized,
    signal: controller.signal,
    lastEventId: req.get('last-event-id'),
  };
}
