/** One pino logger per process; JSON lines on stdout. */
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, base: { service: 'api' }, timestamp: pino.stdTimeFunctions.isoTime }, destination);
}
