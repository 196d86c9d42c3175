-- pgvector: document chunks' embeddings and similarity search.
create extension if not exists vector;
-- pgcrypto: digests and random bytes in SQL (PGlite ships it as a contrib
-- extension, loaded in src/db/embedded.ts; production servers have it in contrib).
create extension if not exists pgcrypto;
