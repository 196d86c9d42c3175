/**
 * One pino logger per process; JSON lines on stdout. `serve` and its children (the AI service, the
 * job worker) share that output, so each line names its process's pid.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, base: { service: 'api', pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime }, destination);
}
