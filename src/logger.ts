/**
 * One pino logger per process; JSON lines on stdout. `serve` and its children (the AI service, the
 * job worker) share that output, so each line names its process's pid. A line written inside a
 * span carries its `trace_id` and `span_id` (issue 41), so logs and traces join; while tracing is
 * off the mixin costs one check (pino merges the line into the object it answers: a new one each).
 */
import { pino, type Logger } from 'pino';
import { logIds } from './telemetry/tracing.ts';

export type { Logger };

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, base: { service: 'api', pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime, mixin: () => logIds() ?? {} }, destination);
}
