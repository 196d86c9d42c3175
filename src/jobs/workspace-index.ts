/**
 * workspace.index: every document of a workspace the job was created with (job_documents,
 * job-documents-store.ts), indexed as document.index indexes one (index-document.ts), a few at a
 * time, in slices. A slice works for about SLICE_MS, then the job's next slice is queued behind
 * the other organizations' jobs (lifecycle.ts continueRun), so a workspace of ten thousand
 * documents takes its turns with everyone else instead of holding a worker for an hour.
 *
 * Each document ends on its own: indexed (or unchanged), gone (deleted meanwhile) or failed with
 * its reason, and what it was charged and did not earn is given back at once (lifecycle.ts
 * endJobDocument). A transient failure (the AI service timed out on it) leaves the document
 * pending for a later slice, up to RETRY_LIMIT more tries. When nothing at all in a slice went
 * through, the trouble is not one document's: the slice fails as a whole and the queue retries the
 * job after its backoff, as it would a document.index job, without counting it against any of
 * its documents. A busy AI service (429, its queues full) is waited for and never counted.
 */
import { AiServiceError } from '../ai-service/client.ts';
import { indexCredits } from '../credits/pricing.ts';
import { findDocument } from '../documents/store.ts';
import { isRetryable, readableMessage } from './failure-message.ts';
import { chargeRest, DocumentGone, indexDocument } from './index-document.ts';
import { countPending, pendingDocuments, summarizeJobDocuments, type PendingDocument } from './job-documents-store.ts';
import type { KindDeps, KindRun } from './kind-deps.ts';
import type { DocumentEnd } from './lifecycle.ts';
import { RETRY_LIMIT } from './queue.ts';
import { currentModel } from './embed-chunks.ts';
import { findJob, type JobRow } from './store.ts';

/** A kind's answer when its job is not done: the worker queues its next slice (worker.ts), after `afterSeconds`. */
export class ContinueLater {
  readonly afterSeconds: number;
  constructor(afterSeconds = 0) {
    this.afterSeconds = afterSeconds;
  }
}

/** How long a slice takes new documents before it gives its worker back. */
export const SLICE_MS = 5_000;
/**
 * Documents a slice works on at once: enough for the AI service to fill its batches (8 texts) with
 * their embeddings across requests and keep its extraction threads busy (docs/ai-service.md), and
 * within its queues' bound for one organization (8 waiting extractions), so one job alone is never
 * refused as busy.
 */
export const IN_FLIGHT = 8;
/** At most this many `failures` in the result; the rest are counted in `failed`. */
export const MAX_FAILURES = 100;
/** Progress events on jobs.stream at most this often (each document still counts at once). */
const ANNOUNCE_MS = 1_000;
/** A slice that only met a busy AI service waits this long when it did not say (seconds). */
const BUSY_WAIT_SECONDS = 2;

type Outcome = { kind: 'ended' } | { kind: 'stopped' } | { kind: 'transient'; document: PendingDocument; error: unknown } | { kind: 'busy'; afterSeconds: number };

export async function runWorkspaceIndex(job: JobRow, deps: KindDeps, run: KindRun): Promise<unknown> {
  const sliceEnds = performance.now() + (deps.sliceMs ?? SLICE_MS);
  let lastAnnounce = 0;
  let stopped = false;
  let model = '';
  const outcomes: Outcome[] = [];
  // Once a slice, not once a document: the AI service's health call is a round trip of its own.
  const served = await currentModel(deps.ai);

  const end = async (documentId: string, ended: DocumentEnd): Promise<Outcome> => {
    const now = performance.now();
    const announce = now - lastAnnounce >= ANNOUNCE_MS;
    if (announce) lastAnnounce = now;
    const row = await run.jobs.endJobDocument(job, documentId, ended, { now: deps.now(), announce });
    if (row) return { kind: 'ended' };
    // Not pending any more: the job was canceled (or failed) meanwhile, which settled it.
    return (await findJob(deps.sql, job.id))?.status === 'running' ? { kind: 'ended' } : { kind: 'stopped' };
  };

  const indexOne = async (pending: PendingDocument): Promise<Outcome> => {
    const document = await findDocument(deps.sql, pending.documentId);
    if (!document || document.status !== 'ready') return end(pending.documentId, { state: 'gone' });
    try {
      const indexed = await indexDocument(
        document,
        deps,
        async (chunks) => {
          // As document.index: the price by chunks, less what was charged at create (0 for a free re-index).
          const due = pending.credits > 0 ? indexCredits(chunks) - pending.credits : 0;
          if (due > 0) {
            const plan = await deps.plans.limitsFor(job.organizationId);
            await chargeRest(chunks, due, () => run.jobs.chargeJobDocument(job, pending.documentId, due, { now: deps.now(), plan }));
          }
        },
        served ? { model: served } : {},
      );
      if (indexed.model) model = indexed.model;
      return end(pending.documentId, { state: indexed.unchanged ? 'unchanged' : 'indexed', chunks: indexed.chunks });
    } catch (error) {
      if (error instanceof DocumentGone) return end(pending.documentId, { state: 'gone' });
      if (error instanceof AiServiceError && error.status === 429) return { kind: 'busy', afterSeconds: error.retryAfterSeconds ?? BUSY_WAIT_SECONDS };
      if (!isRetryable(error)) return end(pending.documentId, { state: 'failed', message: readableMessage(error) });
      return { kind: 'transient', document: pending, error };
    }
  };

  // IN_FLIGHT lanes take the pending documents in id order until the slice's time is up. One
  // page is read at a time, shared: two lanes must never take the same document (it would be
  // charged twice).
  let cursor: string | null = null;
  const page: PendingDocument[] = [];
  let exhausted = false;
  let reading: Promise<void> | null = null;
  // A slice takes at least one round of documents whatever its time, so every slice moves the job on.
  let taken = 0;
  const take = async (): Promise<PendingDocument | undefined> => {
    for (;;) {
      if (stopped || run.signal.aborted || (taken >= IN_FLIGHT && performance.now() >= sliceEnds)) return undefined;
      if (page.length > 0) {
        taken += 1;
        return page.shift();
      }
      if (exhausted) return undefined;
      reading ??= pendingDocuments(deps.sql, job.id, cursor, IN_FLIGHT * 4)
        .then((rows) => {
          page.push(...rows);
          exhausted = rows.length === 0;
          cursor = rows.at(-1)?.documentId ?? cursor;
        })
        .finally(() => (reading = null));
      await reading;
    }
  };
  const lane = async () => {
    for (let pending = await take(); pending; pending = await take()) {
      const outcome = await indexOne(pending);
      outcomes.push(outcome);
      if (outcome.kind === 'stopped') stopped = true;
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  if (stopped) return { canceled: true }; // the worker's succeedRun finds it no longer running and changes nothing

  const ended = outcomes.filter((outcome) => outcome.kind === 'ended').length;
  const transient = outcomes.filter((outcome) => outcome.kind === 'transient');
  if (ended === 0 && transient.length > 0) throw transient[0]!.error; // not one document's trouble: the queue retries the job
  for (const failure of transient) {
    const attempts = await run.jobs.retryJobDocument(job.id, failure.document.documentId, readableMessage(failure.error));
    if (attempts !== null && attempts > RETRY_LIMIT) await end(failure.document.documentId, { state: 'failed', message: readableMessage(failure.error) });
  }

  if ((await countPending(deps.sql, job.id)) > 0) {
    const busy = outcomes.filter((outcome) => outcome.kind === 'busy');
    return new ContinueLater(ended === 0 && busy.length > 0 ? Math.max(...busy.map((outcome) => outcome.afterSeconds)) : 0);
  }
  const summary = await summarizeJobDocuments(deps.sql, job.id, MAX_FAILURES);
  return { ...summary, model: model || served };
}
