-- 0012: fair service across organizations (docs/jobs.md, Fairness). Each queued job carries its
-- virtual start, the place it was given in start-time fair queueing: pg-boss fetches by it (its
-- priority is minus this), and the next job of the same organization starts after the last one
-- it still has queued, so organizations interleave instead of waiting behind each other's backlog.
-- Null on jobs queued before this migration (they are served first, as pg-boss's priority 0).
alter table jobs add column queue_start integer;

-- An organization's queued jobs: counted against MAX_QUEUED_JOBS_PER_ORGANIZATION, and the last
-- virtual start among them, on every jobs.create. Partial, so it holds only the (capped) queued
-- rows, however many finished jobs the organization has.
create index jobs_queued on jobs (organization_id, queue_start) where status = 'queued';
