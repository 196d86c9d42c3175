/**
 * Server-sent events for streaming procedures (jobs.stream), on both transports. The call takes
 * the binding layer's one path (401, 400, 403, 501); the stream handler then writes events through
 * a sink that knows nothing about Express. With response validation on, every event's data is
 * checked against the contract like any answer.
 */
import type { Request, Response } from 'express';
import type { EventSink, StreamHandler } from '../context.ts';
import { schemaValidator } from '../contract/validators.ts';
import { checkAnswer, invoke, NO_BODY, type Call } from './procedure-call.ts';

export type { EventSink, StreamHandler, StreamHandlers } from '../context.ts';

/** The contract's schema of each event's `data:` line (jobs.stream's `$defs`). */
const EVENT_SCHEMAS: Record<string, string> = {
  ready: 'StreamReadyEvent',
  job: 'JobEvent',
  end: 'StreamEndEvent',
  error: 'TooManyRequestsError',
};

export async function sendStream(
  call: Omit<Call<void>, 'run' | 'body'>,
  handler: StreamHandler | undefined,
  req: Request,
  res: Response,
): Promise<void> {
  const validate = call.services.config.validateResponses;
  await invoke<void>({
    ...call,
    body: () => NO_BODY,
    run: handler && (async (input, ctx) => {
      const sink = openStream(call.procedure.successStatus, req, res, validate ? checkEvent(call.procedure.name) : undefined);
      try {
        await handler(input, ctx, sink);
      } finally {
        if (!res.writableEnded) sink.close();
      }
    }),
  });
}

function checkEvent(procedure: string): (event: string, data: unknown) => void {
  return (event, data) => {
    const schema = EVENT_SCHEMAS[event];
    if (!schema) throw new Error(`${procedure} sent the event ${event}, which its contract does not declare`);
    checkAnswer(`${procedure} (event ${event})`, schemaValidator(schema), data);
  };
}

/** Starts the 200 event-stream answer once the call is admitted. */
function openStream(status: number, req: Request, res: Response, check: ((event: string, data: unknown) => void) | undefined): EventSink {
  const controller = new AbortController();
  res.status(status);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  req.on('close', () => controller.abort());
  return {
    send(event, data, id) {
      if (controller.signal.aborted) return;
      check?.(event, data);
      res.write(`event: ${event}\n${id === undefined ? '' : `id: ${id}\n`}data: ${JSON.stringify(data)}\n\n`);
    },
    comment(text) {
      if (!controller.signal.aborted) res.write(`: ${text.replace(/[\r\n]/g, ' ')}\n\n`);
    },
    close() {
      controller.abort();
      res.end();
    },
    signal: controller.signal,
    lastEventId: req.get('last-event-id'),
  };
}
