-- 0009: a failed job is retried at most once, and a refund counts in the period of its charge.

-- decisions.md: "a failed job can be retried once". Concurrent jobs.retry calls of one job each
-- made a job (each charged, each processing the document): the unique index makes the second
-- insert fail, and jobs.retry answers 409. Extra retries made before this migration keep their
-- history in input.retryOf; only the column of all but the first is cleared, so the index holds.
update jobs set retry_of = null
where id in (
  select id from (
    select id, row_number() over (partition by retry_of order by created_at, id) as n
    from jobs where retry_of is not null
  ) numbered
  where n > 1
);
drop index jobs_retry_of;
-- Unique, and not partial: it also serves the foreign key (NULLs stay distinct).
create unique index jobs_retry_of on jobs (retry_of);

-- The period a ledger row counts in. A charge counts when it is made; a refund counts at the
-- moment of the charge it gives back, so cancelling in May a job charged in April lowers April's
-- spending, not May's (decisions.md, Credits). created_at stays the moment the row was written.
alter table credit_ledger add column counts_at timestamptz;
update credit_ledger set counts_at = created_at;
update credit_ledger refund set counts_at = charge.created_at
from (
  select distinct on (job_id) job_id, created_at
  from credit_ledger where amount > 0 and job_id is not null
  order by job_id, created_at
) charge
where refund.amount < 0 and refund.job_id = charge.job_id;
alter table credit_ledger alter column counts_at set not null;
alter table credit_ledger alter column counts_at set default now();
drop index credit_ledger_period;
create index credit_ledger_period on credit_ledger (organization_id, counts_at);
