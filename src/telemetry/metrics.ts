/**
 * The telemetry resource (decisions.md, "Other"): Prometheus metrics of one app, in a registry of
 * its own (never prom-client's global one: tests build many apps in one process).
 *
 * - `workspace_api_requests_total{procedure,status}` and
 *   `workspace_api_request_duration_seconds{procedure,status}`: every call of a procedure or
 *   identity route, labelled by its name (never the raw path: ids would make a series per row)
 *   and the status the client got. Event streams are counted but not timed (they last minutes).
 * - `workspace_api_queue_depth`, `_running`, `_failed`: jobs by state, read from the database at
 *   scrape time (NaN when it cannot be read; `workspace_api_database_up` then says 0).
 * - `workspace_api_info{version}`: always 1; the version is the health route's.
 * - `workspace_api_job_queue_wait_seconds` and `workspace_api_job_run_seconds` by kind and
 *   organization: recorded by the worker on the same database in this process (job-metrics.ts).
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Db } from '../db/db.ts';
import type { Logger } from '../logger.ts';
import { queueStats } from '../jobs/queue-stats.ts';
import type { JobMetrics } from './job-metrics.ts';
import { version } from '../version.ts';

export interface Metrics {
  /** One finished call: its procedure name, the status sent and how long it took. */
  recordCall(procedure: string, status: number, seconds: number | null): void;
  /** The text exposition of every metric, with the queue gauges read now. */
  scrape(): Promise<string>;
  readonly contentType: string;
}

export function createMetrics(options: { sql: Db; logger: Logger; jobs: JobMetrics }): Metrics {
  const registry = new Registry();
  const labelNames = ['procedure', 'status'] as const;
  const requests = new Counter({ name: 'workspace_api_requests_total', help: 'Calls of procedures and identity routes, by name and status sent.', labelNames, registers: [registry] });
  const duration = new Histogram({
    name: 'workspace_api_request_duration_seconds',
    help: 'Time from the request to the end of the response, by procedure and status (event streams excluded).',
    labelNames,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const gauge = (name: string, help: string) => new Gauge({ name, help, registers: [registry] });
  const depth = gauge('workspace_api_queue_depth', 'Jobs queued and not started (read at scrape time).');
  const running = gauge('workspace_api_queue_running', 'Jobs running (read at scrape time).');
  const failed = gauge('workspace_api_queue_failed', 'Jobs that failed for good (read at scrape time).');
  const databaseUp = gauge('workspace_api_database_up', '1 when the scrape could read the database, else 0.');
  for (const histogram of options.jobs.histograms) registry.registerMetric(histogram);
  new Gauge({ name: 'workspace_api_info', help: 'The service version; always 1.', labelNames: ['version'], registers: [registry] }).set({ version }, 1);

  return {
    contentType: registry.contentType,
    recordCall(procedure, status, seconds) {
      const labels = { procedure, status: String(status) };
      requests.inc(labels);
      if (seconds !== null) duration.observe(labels, seconds);
    },
    async scrape() {
      try {
        const stats = await queueStats(options.sql);
        depth.set(stats.depth);
        running.set(stats.running);
        failed.set(stats.failed);
        databaseUp.set(1);
      } catch (error) {
        options.logger.warn({ err: error }, 'metrics: the queue counts could not be read');
        for (const unknown of [depth, running, failed]) unknown.set(Number.NaN);
        databaseUp.set(0);
      }
      return registry.metrics();
    },
  };
}
