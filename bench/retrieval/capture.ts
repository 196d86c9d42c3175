/**
 * The two rankings behind documents.search's hybrid ranking, saved for every test query so that
 * fusions can be compared offline in seconds (fusion.ts) instead of re-ingesting the collection
 * (about 6 minutes of both cores) for each. Run by run.ts after its ingest when RETRIEVAL_CAPTURE
 * names a file:
 *   RETRIEVAL_CAPTURE=/tmp/rankings.json node bench/retrieval/run.ts
 * Each query is embedded as documents.search embeds it (the app's AI client, the organization's
 * model), then chunk-search.ts's rankChunks reads both rankings to RANKING_DEPTH with their own
 * scores (cosine similarity, BM25), unfiltered. Chunks keep their ids (fusion's tie-break) and
 * name their document (the collection's id), so fusions at the chunk or the document level both
 * can be evaluated.
 */
import { writeFileSync } from 'node:fs';
import { rankChunks, type Ranked } from '../../src/documents/chunk-search.ts';
import type { DocumentApp, Tenant } from '../document-app.ts';
import type { Collection } from './dataset.ts';

/** One ranked chunk: its id, its document's id in the collection, its score in that ranking. */
export type CapturedHit = [chunkId: string, documentId: string, score: number];

export interface CapturedQuery {
  id: string;
  vector: CapturedHit[];
  text: CapturedHit[];
}

export interface Capture {
  collection: string;
  model: string;
  queries: CapturedQuery[];
}

export async function captureRankings(app: DocumentApp, tenant: Tenant, collection: Collection, path: string): Promise<void> {
  const { sql } = app.services.db;
  const chunks = await sql<{ id: string; name: string }[]>`
    select c.id, d.name from document_chunks c join documents d on d.id = c.document_id where c.workspace_id = ${tenant.workspaceId}`;
  const documentOf = new Map(chunks.map((row) => [row.id, row.name.replace(/\.txt$/, '')]));
  const hits = (ranked: Ranked[]): CapturedHit[] => ranked.map(({ id, score }) => [id, documentOf.get(id) ?? '', score]);
  const queries: CapturedQuery[] = [];
  let model = '';
  for (const query of collection.queries) {
    const embedded = await app.services.ai.embed([query.text], { organizationId: tenant.organizationId });
    model = embedded.model;
    const { vector, text } = await rankChunks(sql, { workspaceId: tenant.workspaceId, model, text: query.text, vector: embedded.vectors[0]!, limit: 50 });
    queries.push({ id: query.id, vector: hits(vector), text: hits(text) });
  }
  const capture: Capture = { collection: collection.name, model, queries };
  writeFileSync(path, JSON.stringify(capture));
  console.log(`  captured both rankings of ${queries.length} queries (${model}) to ${path}`);
}
