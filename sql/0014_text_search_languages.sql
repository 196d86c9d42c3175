-- 0014: full text in each document's language (issue 24, item 4; docs/ai-service.md, Languages).

-- The language the AI service detected in the text, ISO 639-3 (`deu`, `cmn`), `und` when it could
-- not tell; null for texts stored before this migration (indexed as `und`).
alter table document_texts add column language text;

-- Each chunk is indexed with its document's text search configuration
-- (documents/text-search-config.ts): the language's own, `simple` for a language without one.
-- Chunks from before this migration were indexed with `english`, which the default keeps.
-- `search_text` is the chunk's text with its Chinese, Japanese and Korean runs split into words
-- (documents/search-words.ts), what PostgreSQL's parser cannot do; null when the text has none,
-- and then the text itself is indexed.
alter table document_chunks
  add column search_config regconfig not null default 'english',
  add column search_text text;

-- The generated columns of 0008 follow the chunk's configuration; a generated expression cannot
-- be altered in place (PostgreSQL 15), so the columns are dropped (and the index with them) and
-- added again, which computes them for every existing chunk: the same values, `english` over the
-- text, as before.
alter table document_chunks drop column search_vector, drop column search_length;
alter table document_chunks
  add column search_vector tsvector generated always as (to_tsvector(search_config, coalesce(search_text, text))) stored,
  add column search_length integer generated always as (length(to_tsvector(search_config, coalesce(search_text, text)))) stored;
-- fastupdate off, as in 0008: an insert never merges a whole pending list on the API's event loop.
create index document_chunks_search_vector on document_chunks using gin (search_vector) with (fastupdate = off);

-- A search analyses its query with each configuration the workspace's chunks of the model use
-- (chunk-search.ts, queryTerms): one probe of this index per configuration the server has, instead
-- of reading every chunk or document of the workspace. It replaces 0008's (workspace_id, model),
-- whose statements use it as they did.
drop index document_chunks_workspace_model;
create index document_chunks_workspace_model_config on document_chunks (workspace_id, model, search_config);
