/**
 * The jobs' histograms (issue 41), recorded by the worker (jobs/worker.ts) and served by the
 * /metrics of the app on the same database in this process (metrics.ts):
 *
 * - `workspace_api_job_queue_wait_seconds{kind,organization}`: from when a delivery was due (the
 *   job queued, a retry's backoff over, a workspace.index slice queued) to a worker taking it.
 * - `workspace_api_job_run_seconds{kind,organization}`: one run of the kind, whatever its end
 *   (succeeded, failed, to be retried, its slice over).
 *
 * One set per service (composition/services.ts), given to its worker and to its app's registry,
 * never prom-client's global one: tests run many apps in one process. A worker without an app in
 * its process (`worker`) records them where nothing scrapes: one entry per kind and organization.
 *
 * No exemplars (trace ids on buckets): prom-client writes them only in an OpenMetrics registry and
 * throws when a metric with exemplars joins a Prometheus one, while /metrics serves the Prometheus
 * text format 0.0.4 (http/metrics-route.ts and its tests; scrapers configured for it). Switching
 * the whole exposition to OpenMetrics changes every series' format for those scrapers.
 */
import { Histogram } from 'prom-client';

const labelNames = ['kind', 'organization'] as const;

export interface JobMetrics {
  /** A delivery was taken `seconds` after it was due. */
  waited(kind: string, organizationId: string, seconds: number): void;
  /** A run of the kind took `seconds`. */
  ran(kind: string, organizationId: string, seconds: number): void;
  /** The histograms, for a registry to serve. */
  readonly histograms: readonly Histogram<(typeof labelNames)[number]>[];
}

export function createJobMetrics(): JobMetrics {
  // Registered by the registries that serve them (metrics.ts), not here.
  const wait = new Histogram({
    name: 'workspace_api_job_queue_wait_seconds',
    help: 'Time from when a job delivery was due (queued, or its retry backoff over) to a worker taking it, by kind and organization.',
    labelNames,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800],
    registers: [],
  });
  const run = new Histogram({
    name: 'workspace_api_job_run_seconds',
    help: 'Time one run of a job took in the worker (any end: succeeded, failed, retried, slice over), by kind and organization.',
    labelNames,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600],
    registers: [],
  });
  return {
    histograms: [wait, run],
    waited: (kind, organization, seconds) => wait.observe({ kind, organization }, seconds),
    ran: (kind, organization, seconds) => run.observe({ kind, organization }, seconds),
  };
}
