-- 0013: citations, re-indexing without re-embedding, and chunks stored in short transactions
-- (issue 24, items 1 and 5; docs/jobs.md, Storing chunks).

-- Where each chunk came from. `start_offset`/`end_offset`: its range [start, end) in the
-- document's extracted text (document_texts.text) in UTF-16 code units, as JavaScript string
-- indexes, so `text.slice(start_offset, end_offset)` is the chunk. `first_page`/`last_page`: the
-- 1-based PDF pages it spans (null for other types). `heading_path`: the headings a DOCX, HTML or
-- Markdown chunk sits under (null when none). All null on chunks stored before this migration.
alter table document_chunks
  add column start_offset integer,
  add column end_offset integer,
  add column first_page integer,
  add column last_page integer,
  add column heading_path text[],
  -- sha256 (hex) of the chunk's text: a re-index reuses the stored embedding of a chunk of the
  -- same text and model instead of embedding it again.
  add column text_hash text,
  -- Which indexing run wrote the chunk. A run writes its chunks under a new generation in short
  -- transactions; they are not the document's chunks until one short transaction sets
  -- documents.chunk_generation to it; the old generation is then deleted in batches. Search reads
  -- only `generation = documents.chunk_generation`. Chunks from before this migration are
  -- generation 0, as are their documents.
  add column generation bigint not null default 0;

-- Two runs of one document write the same indexes under different generations.
alter table document_chunks drop constraint document_chunks_document_id_index_key;
alter table document_chunks add constraint document_chunks_document_generation_index unique (document_id, generation, index);

alter table documents add column chunk_generation bigint not null default 0;
-- Generations are handed out in increasing order: a run only makes its chunks current when its
-- generation is newer than the current one, so the later of two concurrent runs wins.
create sequence document_chunk_generation start 1;

-- Where each page of a PDF's extracted text starts (UTF-16 offsets into document_texts.text, one
-- per page, the first 0), and the headings of an HTML or Markdown text ([{start, level, text}],
-- in order): what indexing derives each chunk's pages and heading path from. Null for other types
-- and for texts stored before this migration.
alter table document_texts
  add column page_starts integer[],
  add column headings jsonb;
