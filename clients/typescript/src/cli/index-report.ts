/**
 * How a `workspace.index` job reads when it ends: its result in a few words (how many documents
 * were indexed of how many, the chunks, the model) and the documents that failed, with their names
 * when the service still has them.
 */
import { grouped } from './format.ts';
import type { Job } from './job-follow.ts';
import type { Client } from './session.ts';
import { renderTable } from './table.ts';

/** The result of a workspace.index job (Job.yaml, `result`); `failures` lists the first 100. */
interface IndexResult {
  documents: number;
  indexed: number;
  unchanged: number;
  gone: number;
  failed: number;
  chunks: number;
  model?: string;
  failures?: { documentId: string; message: string }[];
}

/** A failed document of the job, with its name (undefined when it was deleted since). */
export interface IndexFailure {
  documentId: string;
  name: string | undefined;
  message: string;
}

/** Name lookups at once: a hundred failures take a few round trips, not a hundred. */
const LOOKUPS_AT_ONCE = 4;

const plural = (value: number, noun: string) => `${grouped(value)} ${noun}${value === 1 ? '' : 's'}`;

/** `3 of 4 documents indexed, 1 failed; 7 chunks embedded with all-MiniLM-L6-v2`, or that there was nothing to do. */
export function indexSummary(result: IndexResult): string {
  const model = typeof result.model === 'string' ? result.model : undefined;
  if (result.documents === 0) return `nothing to index${model ? `: every ready document is indexed with ${model}` : ''}`;
  // Unchanged documents count as indexed: their stored chunks were already the ones the model gives.
  const parts = [`${grouped(result.indexed + result.unchanged)} of ${plural(result.documents, 'document')} indexed${result.unchanged > 0 ? ` (${grouped(result.unchanged)} already up to date)` : ''}`];
  if (result.failed > 0) parts.push(`${grouped(result.failed)} failed`);
  if (result.gone > 0) parts.push(`${grouped(result.gone)} deleted meanwhile`);
  return `${parts.join(', ')}; ${plural(result.chunks, 'chunk')} embedded${model ? ` with ${model}` : ''}`;
}

export function indexResultOf(job: Job): IndexResult | undefined {
  const result = job.result as IndexResult | undefined;
  return job.kind === 'workspace.index' && result && typeof result.documents === 'number' ? result : undefined;
}

/** The failed documents of a finished workspace.index job (none for other jobs), each with its name. */
export async function indexFailures(client: Client, job: Job): Promise<IndexFailure[]> {
  const failures = indexResultOf(job)?.failures ?? [];
  const named: IndexFailure[] = [];
  for (let start = 0; start < failures.length; start += LOOKUPS_AT_ONCE) {
    const batch = failures.slice(start, start + LOOKUPS_AT_ONCE);
    const names = await Promise.all(
      batch.map(({ documentId }) =>
        client.documents.get({ id: documentId }).then(
          (document) => document.name,
          () => undefined,
        ),
      ),
    );
    batch.forEach((failure, i) => named.push({ documentId: failure.documentId, name: names[i], message: failure.message }));
  }
  return named;
}

/** The failed documents as a table: id, name (`-` once deleted), the reason. */
export function failuresTable(failures: readonly IndexFailure[], width: number | undefined): string {
  return renderTable(
    failures,
    [
      { header: 'DOCUMENT', value: (failure) => failure.documentId },
      { header: 'NAME', value: (failure) => failure.name ?? '-', shrink: true },
      { header: 'REASON', value: (failure) => failure.message, shrink: true },
    ],
    width,
  );
}
