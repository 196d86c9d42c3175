-- 0021: where a job's first run is in the traces (issue 41, docs/observability.md). The W3C trace
-- context ({ "traceparent": ..., "tracestate"?: ... }) of the span of the job's first run, written
-- by the start that makes it running for the first time while tracing is on (jobs/store.ts
-- transitionJob); the span of every later attempt and slice links to it, so a retry is found from
-- the first attempt and back. Null while tracing is off and on the jobs of earlier releases.
--
-- Only additions (docs/migrations.md): a nullable column without a default (no rewrite, no scan).
-- The previous release neither reads nor writes it.
alter table jobs add column first_run_trace jsonb;
