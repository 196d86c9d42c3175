-- 0017: the job kind workspace.index (issue 38): one job that extracts and indexes every document
-- of a workspace not yet indexed with the current model, taking turns with other organizations'
-- jobs a few documents at a time (docs/jobs.md, "Indexing a workspace").
--
-- Only additions (docs/migrations.md): the kind check is widened by replacing it with a NOT VALID
-- one (no scan; the old rows all pass it, and 0018 or later validates it), a nullable column
-- without a default (no rewrite), and a new table. The previous release ignores all three: its
-- workers leave a kind they do not know to a newer worker only from this release on, so see
-- docs/deploying.md before creating workspace.index jobs during a rolling upgrade.
-- Under the same name, in one statement (the drop is done before the add), so that the next kind
-- is added the same way (docs/contract-changes.md, "Adding a job kind").
alter table jobs
  drop constraint jobs_kind_check,
  add constraint jobs_kind_check check (kind in ('document.extract', 'document.index', 'text.embed', 'workspace.index')) not valid;

-- How far a job over many documents has come: { documents, done, failed } (the contract's
-- JobProgress); null for the other kinds.
alter table jobs add column progress jsonb;

-- The documents of a workspace.index job, fixed when it is created, each with what it was charged
-- and where it stands. Written only by jobs/job-documents-store.ts.
create table job_documents (
  job_id text not null references jobs (id) on delete cascade,
  -- No foreign key: a document deleted while the job runs is reported as gone, and refunded.
  document_id text not null,
  -- Credits charged for this document so far (its document.index price, 0 for a re-index after a
  -- model change); given back when it ends failed, gone or canceled.
  credits integer not null check (credits >= 0),
  state text not null default 'pending'
    check (state in ('pending', 'indexed', 'unchanged', 'failed', 'gone', 'canceled')),
  -- Runs of this document that ended in a transient failure (the AI service unreachable): it is
  -- tried again later in the job, and fails for good after the job's retry limit.
  attempts integer not null default 0,
  -- Why it failed, as a document.index job's error would say.
  message text,
  chunks integer,
  primary key (job_id, document_id)
);
-- The pending documents of a job, in the order a run takes them.
create index job_documents_pending on job_documents (job_id, document_id) where state = 'pending';
