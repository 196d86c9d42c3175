/**
 * Loads a BEIR-format test collection: `corpus.jsonl`, `queries.jsonl`, `qrels/test.tsv`.
 */
import { readFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';

/**
 * Where the benchmark's collection is: RETRIEVAL_COLLECTION, or `../shared/datasets/nfcorpus`
 * relative to the repository's root. The data is not part of the repository (docs/benchmarks.md).
 */
export function collectionDir(): string {
  return resolve(process.env.RETRIEVAL_COLLECTION ?? join(import.meta.dirname, '..', '..', '..', 'shared', 'datasets', 'nfcorpus'));
}

export type Document = { id: string; title: string; text: string };
export type Query = { id: string; text: string };
/** query id → (document id → relevance grade). */
export type Qrels = Map<string, Map<string, number>>;
export type Collection = { name: string; documents: Document[]; queries: Query[]; qrels: Qrels };

function jsonLines(path: string): Record<string, unknown>[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, index) => {
      const value: unknown = JSON.parse(line);
      if (typeof value !== 'object' || value === null) throw new Error(`${path}:${index + 1}: not a JSON object`);
      return value as Record<string, unknown>;
    });
}

function field(row: Record<string, unknown>, name: string, path: string): string {
  const value = row[name] ?? (name === 'title' ? '' : undefined);
  if (typeof value !== 'string') throw new Error(`${path}: a row has no string "${name}"`);
  return value;
}

/** Reads BEIR's `query-id\tcorpus-id\tscore` file; the header line is optional. */
export function parseQrels(content: string): Qrels {
  const qrels: Qrels = new Map();
  for (const [index, line] of content.split('\n').entries()) {
    if (line.trim() === '' || (index === 0 && line.startsWith('query-id'))) continue;
    const [query, doc, score] = line.split('\t');
    if (query === undefined || doc === undefined || score === undefined || !/^-?\d+\s*$/.test(score)) {
      throw new Error(`qrels line ${index + 1}: expected query-id<TAB>corpus-id<TAB>score`);
    }
    let judged = qrels.get(query);
    if (judged === undefined) qrels.set(query, (judged = new Map<string, number>()));
    judged.set(doc, Number.parseInt(score, 10));
  }
  return qrels;
}

/**
 * Loads the collection in `dir`. Only the test queries are returned (those with a judgment in
 * `qrels/test.tsv`, in the order of `queries.jsonl`), as BEIR evaluates; a judged query
 * without a text, or a repeated document id, is an error rather than a silently smaller set.
 */
export function loadCollection(dir: string): Collection {
  const root = resolve(dir);
  const corpusPath = join(root, 'corpus.jsonl');
  const queriesPath = join(root, 'queries.jsonl');
  const qrels = parseQrels(readFileSync(join(root, 'qrels', 'test.tsv'), 'utf8'));

  const documents = jsonLines(corpusPath).map((row) => ({
    id: field(row, '_id', corpusPath),
    title: field(row, 'title', corpusPath),
    text: field(row, 'text', corpusPath),
  }));
  const ids = new Set<string>();
  for (const { id } of documents) {
    if (ids.has(id)) throw new Error(`${corpusPath}: document ${id} repeats`);
    ids.add(id);
  }

  const queries = jsonLines(queriesPath)
    .map((row) => ({ id: field(row, '_id', queriesPath), text: field(row, 'text', queriesPath) }))
    .filter((query) => qrels.has(query.id));
  const found = new Set(queries.map((query) => query.id));
  const missing = [...qrels.keys()].filter((id) => !found.has(id));
  if (missing.length > 0) throw new Error(`${queriesPath}: no text for judged queries ${missing.slice(0, 5).join(', ')}`);

  return { name: basename(root), documents, queries, qrels };
}

/**
 * A small collection for trying the benchmark while developing (RETRIEVAL_SAMPLE): the first
 * `size` documents in the corpus's order, the judgments on them, and the queries with at least
 * one relevant document (grade above 0) among them, in their order. Deterministic, so two runs on
 * one sample compare; its figures are not the collection's.
 */
export function sampleCollection(collection: Collection, size: number): Collection {
  const documents = collection.documents.slice(0, size);
  const kept = new Set(documents.map((document) => document.id));
  const qrels: Qrels = new Map();
  for (const [query, judged] of collection.qrels) {
    const inside = new Map([...judged].filter(([id]) => kept.has(id)));
    if ([...inside.values()].some((grade) => grade > 0)) qrels.set(query, inside);
  }
  return { name: `${collection.name} (sample of ${documents.length})`, documents, queries: collection.queries.filter((query) => qrels.has(query.id)), qrels };
}
