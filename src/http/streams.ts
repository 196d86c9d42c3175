/**
 * Server-sent events for streaming procedures (jobs.stream), on both transports. The call goes
 * through the same authentication, validation and access checks as any procedure; the stream
 * handler then writes events through a sink that knows nothing about Express.
 */
import type { Request, Response } from 'express';
import type { ProcedureDefinition } from '../../generated/procedures.ts';
import type { Context, EventSink, Services, StreamHandlers } from '../context.ts';

export type { EventSink, StreamHandler, StreamHandlers } from '../context.ts';
import { ApiError } from '../contract/errors.ts';
import { admitCall } from './procedure-call.ts';


export async function sendStream(
  procedure: ProcedureDefinition,
  streams: StreamHandlers,
  input: Record<string, unknown>,
  req: Request,
  res: Response,
  services: Services,
): Promise<void> {
  const principal = req.principal;
  await admitCall(procedure, input, principal, services);
  const handler = streams[procedure.name];
  if (!handler) throw new ApiError('NOT_IMPLEMENTED');

  const controller = new AbortController();
  res.status(procedure.successStatus);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  req.on('close', () => controller.abort());
  const sink: EventSink = {
    send(event, data, id) {
      if (controller.signal.aborted) return;
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
  const ctx: Context = { requestId: req.id, log: req.log, ip: req.clientIp, principal, services };
  try {
    await handler(input, ctx, sink);
  } finally {
    if (!res.writableEnded) sink.close();
  }
}
