/**
 * How indexing stores a document's chunks (text-store.ts, replaceChunks; issue 24, item 5): in
 * short statements under a new generation, made the document's in one short transaction, so a
 * reader that reads what search reads (`generation = documents.chunk_generation`) never sees a
 * document half old and half new; two runs at once end with one of the two sets, whole; a document
 * deleted meanwhile ends with no chunks and the run answers false. On both databases: on the
 * embedded one the reader's queries take turns with the run's statements on the one connection.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHUNK_BATCH, replaceChunks, type StoredChunk } from '../../src/documents/text-store.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { tenant, uploadDocument, type Tenant } from '../jobs/support.ts';
import { textHash } from '../../src/jobs/embed-chunks.ts';
import { deleteDocument } from '../../src/documents/store.ts';

/** `count` chunks named `${name} ${i}`, each with its own unit vector. */
function chunks(name: string, count: number): StoredChunk[] {
  return Array.from({ length: count }, (_, i) => {
    const text = `${name} ${i}`;
    const embedding = Array.from({ length: 384 }, (_, d) => (d === i % 384 ? 1 : 0));
    return { text, embedding, start: i * 10, end: i * 10 + text.length, firstPage: null, lastPage: null, headingPath: null, textHash: textHash(text) };
  });
}

describe('storing chunks in short statements', () => {
  let server: TestServer;
  let t: Tenant;
  beforeAll(async () => {
    server = await startTestServer({ aiService: false });
    t = await tenant(server);
  }, 60_000);
  afterAll(() => server?.close());

  const newDocument = async (name: string) => {
    const document = await uploadDocument(t, name, 'text/plain', Buffer.from('text'));
    return { id: document.id, organizationId: t.org, workspaceId: t.workspaceId };
  };
  const store = (document: Awaited<ReturnType<typeof newDocument>>, name: string, count: number) => replaceChunks(server.db.sql, document, 'test-model', chunks(name, count), new Date());

  /** In one statement (one snapshot): every row of the document, and the texts search would read. */
  const observe = async (documentId: string) => {
    const [row] = await server.db.sql<{ rows: number; visible: string[] }[]>`
      select (select count(*) from document_chunks where document_id = ${documentId})::int as rows,
             coalesce((select array_agg(c.text order by c.index) from document_chunks c join documents d on d.id = c.document_id
                       where c.document_id = ${documentId} and c.generation = d.chunk_generation), '{}') as visible`;
    return row!;
  };
  const texts = (name: string, count: number) => chunks(name, count).map((chunk) => chunk.text);

  it('never shows a reader a document half old and half new', async () => {
    const document = await newDocument('readers.txt');
    expect(await store(document, 'old', 120)).toBe(true);
    const old = texts('old', 120);
    const fresh = texts('new', 50 * CHUNK_BATCH);
    let done = false;
    const storing = store(document, 'new', fresh.length).finally(() => (done = true));
    const seen: { rows: number; visible: string[] }[] = [];
    while (!done) seen.push(await observe(document.id));
    expect(await storing).toBe(true);
    for (const { visible } of seen) expect([old, fresh]).toContainEqual(visible);
    // The reader did look while the new chunks were half written (not only before or after).
    expect(seen.some(({ rows, visible }) => rows > old.length && rows < old.length + fresh.length && visible.length === old.length)).toBe(true);
    // The old generation is gone once the run answers.
    expect(await observe(document.id)).toEqual({ rows: fresh.length, visible: fresh });
    const [indexed] = await server.db.sql`select chunk_count from documents where id = ${document.id}`;
    expect(indexed!.chunk_count).toBe(fresh.length);
  });

  it('ends two runs of one document at once with one of their sets, whole', async () => {
    const document = await newDocument('twice.txt');
    const [a, b] = await Promise.all([store(document, 'first', 3 * CHUNK_BATCH + 7), store(document, 'second', 2 * CHUNK_BATCH + 3)]);
    expect([a, b]).toEqual([true, true]);
    const { rows, visible } = await observe(document.id);
    expect(rows).toBe(visible.length);
    expect([texts('first', 3 * CHUNK_BATCH + 7), texts('second', 2 * CHUNK_BATCH + 3)]).toContainEqual(visible);
    const [generations] = await server.db.sql<{ count: number }[]>`select count(distinct generation)::int as count from document_chunks where document_id = ${document.id}`;
    expect(generations!.count).toBe(1);
  });

  it('answers false and leaves no chunk when the document is deleted while its chunks are stored', async () => {
    const document = await newDocument('deleted.txt');
    // Many statements' worth, so the run is still writing when the document goes: on the embedded
    // database the delete takes its turn right after the next one, on a server it is one round trip.
    const storing = store(document, 'doomed', 200 * CHUNK_BATCH);
    // Once some of them are in, the document goes (and its chunks with it, by the foreign key).
    while ((await observe(document.id)).rows === 0) {
      /* the next look waits its turn behind the next batch */
    }
    await deleteDocument(server.db.sql, document.id);
    expect(await storing).toBe(false);
    expect(await observe(document.id)).toEqual({ rows: 0, visible: [] });
  });

  it('answers false for a document deleted before', async () => {
    const document = await newDocument('gone.txt');
    await t.client.documents.delete({ id: document.id });
    expect(await store(document, 'late', 3)).toBe(false);
    expect((await observe(document.id)).rows).toBe(0);
  });
});
