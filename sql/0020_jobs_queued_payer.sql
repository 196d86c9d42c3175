-- 0020: the index the payer's queued-job count reads (jobs/store.ts queuedJobsOf), as jobs_queued
-- (0012) is for the organization's: only queued rows, so its size follows the caps, not the
-- history. Built CONCURRENTLY, in a file of its own (docs/migrations.md): jobs takes writes
-- throughout.
create index concurrently if not exists jobs_queued_payer on jobs (payer, queue_start) where status = 'queued';
