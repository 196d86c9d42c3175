/**
 * Indexing one document, as document.index does and workspace.index does for each of its
 * documents (kinds.ts, workspace-index.ts): its stored text or an extraction first, the price
 * settled once the chunks are counted, then only the chunks that changed embedded and stored
 * (embed-chunks.ts, text-store.ts ChunkWriter).
 */
import type { Document } from '../documents/store.ts';
import { objectKey } from '../documents/store.ts';
import { chunkWriter, readIndexableText, saveDocumentText, searchConfigOf, touchIndexed, unchangedChunks } from '../documents/text-store.ts';
import { textSearchConfig } from '../documents/text-search-config.ts';
import { placeChunks, type ChunkPlace } from './chunk-places.ts';
import { currentModel, embedChunks, textHash } from './embed-chunks.ts';
import { ApiError } from '../contract/errors.ts';
import { indexCredits } from '../credits/pricing.ts';
import { JobFailure } from './job-failure.ts';
import type { KindDeps } from './kind-deps.ts';

/**
 * Indexes one document (document.index, and each document of workspace.index): its stored text,
 * or an extraction first; `pay` is told the chunk count before anything is embedded and throws to
 * stop (the plan's credits do not cover it). `options.model`: the model the AI service serves, when
 * the caller asked it already (workspace.index, once a slice). `unchanged`: the stored chunks were
 * already these.
 */
export async function indexDocument(
  document: Document,
  deps: KindDeps,
  pay: (chunks: number) => Promise<void>,
  options: { model?: string } = {},
): Promise<{ chunks: number; model: string; unchanged: boolean }> {
  // A document never extracted has no stored text, and one never indexed no current chunks to
  // compare with: the statements that would look are skipped (a run racing another only embeds
  // again). Embeddings are still looked for: a run killed before its finish left its chunks, and
  // their vectors, in a generation of their own (text-store.ts storedEmbeddings).
  const stored = document.extracted ? await readIndexableText(deps.sql, document.id) : null;
  const indexedBefore = document.indexedAt !== null;
  const { chunks, language } = stored ? { chunks: placeChunks(await deps.chunker.chunk(stored.text), stored.pageStarts, stored.headings), language: stored.language } : await extract(document, deps);
  await pay(chunks.length);
  const texts = chunks.map((chunk) => chunk.text);
  const hashes = texts.map(textHash);
  const placed = chunks.map((chunk, index) => ({ ...chunk, textHash: hashes[index]! }));
  const config = await searchConfigOf(deps.sql, textSearchConfig(language));
  const now = deps.now();
  const known = options.model ?? (await currentModel(deps.ai));
  // The same text, places, model and configuration as the stored chunks: nothing to embed or write.
  if (indexedBefore && known && (await unchangedChunks(deps.sql, document.id, known, config, placed))) {
    if (!(await touchIndexed(deps.sql, document.id, chunks.length, now))) throw gone();
    return { chunks: chunks.length, model: known, unchanged: true };
  }
  // Stored as they are embedded (text-store.ts ChunkWriter), under a generation made current at the end.
  const writer = await chunkWriter(deps.sql, document, placed, config, now);
  try {
    const { model, stored: written } = await embedChunks(texts, hashes, document, deps, { model: known }, (model, indexes, vectors) => writer.write(model, indexes, vectors));
    if (!written || !(await writer.finish())) throw gone();
    return { chunks: chunks.length, model, unchanged: false };
  } catch (error) {
    await writer.abandon();
    throw error;
  }
}

export async function extract(document: Document, deps: KindDeps): Promise<{ chunks: ChunkPlace[]; characters: number; pages: number | null; language: string }> {
  const { text, pages, pageStarts, headings, language = 'und' } = await extractStored(document, deps);
  if (text.length > deps.maxCharacters) {
    throw new JobFailure(`The document's text has more than ${formatCount(deps.maxCharacters)} characters; at most ${formatCount(deps.maxCharacters)} can be stored.`);
  }
  const chunks = placeChunks(await deps.chunker.chunk(text), pageStarts ?? null, headings ?? null);
  const plan = await deps.plans.limitsFor(document.organizationId);
  const saved = await saveDocumentText(deps.sql, document, { text, pages, chunks: chunks.length, pageStarts, headings, language }, deps.now(), plan?.limits.storageBytes ?? null);
  if (saved === 'limit') {
    throw new JobFailure(`Storing the document's text would take the organization past its plan's storage of ${formatCount(plan!.limits.storageBytes)} bytes.`);
  }
  if (!saved) throw gone();
  return { chunks, characters: saved.characters, pages, language };
}

/** The document a job works on was deleted meanwhile (workspace.index counts it as gone, not failed). */
export class DocumentGone extends JobFailure {
  constructor() {
    super('The document was deleted.');
  }
}

function gone(): JobFailure {
  return new DocumentGone();
}

/**
 * Charges the rest of an index's price once its chunks are counted; a plan whose credits do not
 * cover it fails the document with a message its owner can act on (JobFailure), not a retry.
 */
export async function chargeRest(chunks: number, due: number, charge: () => Promise<void>): Promise<void> {
  try {
    await charge();
  } catch (error) {
    if (!(error instanceof ApiError) || error.code !== 'LIMIT_REACHED') throw error;
    throw new JobFailure(`Indexing this document's ${formatCount(chunks)} chunks costs ${indexCredits(chunks)} AI credits; the plan's credits left this period do not cover the ${due} still due.`);
  }
}

export function formatCount(value: number): string {
  return value.toLocaleString('en-US');
}

/**
 * The stored document sent to the AI service as it is read from storage: no copy of it is held
 * here (two copies of a 17 MB document and their collection stalled the API's event loop for tens
 * of milliseconds on the embedded database, where this worker shares it; docs/benchmarks.md). A
 * failed read fails the call, and its own error is what is thrown (a storage fault, not the
 * AI service's).
 */
async function extractStored(document: Document, deps: KindDeps) {
  const stream = await deps.storage.read(objectKey(document));
  let readError: unknown;
  stream.on('error', (error) => (readError ??= error));
  try {
    return await deps.ai.extract(stream, document.contentType, { organizationId: document.organizationId });
  } catch (error) {
    throw readError ?? error;
  } finally {
    stream.destroy();
  }
}
