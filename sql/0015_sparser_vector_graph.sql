-- 0015: a sparser HNSW graph for the chunks' embeddings (issue 24, item 5; docs/benchmarks.md,
-- "A sparser graph").
--
-- Each chunk's insert adds its vector to the graph, which links it to up to 2 × m neighbours on
-- the bottom layer and rewrites their lists. With pgvector's default m = 16 that entry is about
-- 8 ms of a chunk's 9 ms insert on the embedded database, whose one connection an API request
-- then waits for (bench/chunk-insert.ts); with m = 8 it is about 2.5 ms, ef_construction left at
-- its default (64: it changes the insert's cost little and the graph's quality more). Recall@10
-- at the searches' ef_search (160) stays at or above 0.99 of the exact answer on the synthetic
-- 10 000- and 100 000-chunk corpora (bench/search.ts) and NFCorpus's nDCG does not move
-- (bench/retrieval/run.ts); docs/benchmarks.md has the figures.
--
-- The index is rebuilt here, which reads every chunk once: about 20 s per 100 000 chunks on two
-- cores, during which the migration holds its lock (docs/deploying.md, the `migrate` step).
drop index document_chunks_embedding;
create index document_chunks_embedding on document_chunks using hnsw (embedding vector_cosine_ops) with (m = 8);
