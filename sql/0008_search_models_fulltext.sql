-- Search that finds meaning and words (issue 15; decisions.md, Companion AI service).

-- Every chunk records the embedding model that made its vector: vectors of different models are
-- never compared, so search reads only the chunks of the model that embedded the query, and a
-- model switch re-indexes (`main.ts reindex`). Chunks from before this migration were made by the
-- feature-hashing embedder.
alter table document_chunks add column model text not null default 'local-hash-384';
alter table document_chunks alter column model drop default;
drop index document_chunks_workspace_id;
create index document_chunks_workspace_model on document_chunks (workspace_id, model);

-- Full text over the same chunks, ranked by BM25 in chunk-search.ts. The `english` configuration
-- stems English words and drops English stop words; text in another language that separates words
-- with spaces is still split into words, and the same stemming is applied to its queries, so exact
-- words (and most plural endings) match. `search_length` is the chunk's number of distinct terms,
-- BM25's document length.
alter table document_chunks
  add column search_vector tsvector generated always as (to_tsvector('english'::regconfig, text)) stored,
  add column search_length integer generated always as (length(to_tsvector('english'::regconfig, text))) stored;
-- fastupdate off: with GIN's pending list, an insert that fills it merges the whole list into the
-- index at once (hundreds of milliseconds, on the API's event loop with the embedded database);
-- without it each insert pays its own small share.
create index document_chunks_search_vector on document_chunks using gin (search_vector) with (fastupdate = off);

-- The extracted text is stored too, so it counts toward the organization's storageBytes.
alter table documents add column text_bytes bigint not null default 0;

-- How many chunks the text makes (chunking.ts): an index job is priced by it at create without
-- reading and splitting the text on the API's event loop. 0 for texts stored before (priced at
-- the minimum, the rest charged by the job once it has split the text).
alter table document_texts add column chunks integer not null default 0;
update documents d set text_bytes = octet_length(t.text) from document_texts t where t.document_id = d.id;
