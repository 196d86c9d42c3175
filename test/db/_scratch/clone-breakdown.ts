import { openAsBlob } from 'node:fs'
import { readFile, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { pgcrypto } from '@electric-sql/pglite/contrib/pgcrypto'
import { vector } from '@electric-sql/pglite-pgvector'
import postgres from 'postgres'
import { startEmbeddedDatabase } from '../../../src/db/embedded.ts'
import { embeddedClientOptions } from '../../../src/db/connection.ts'
const tar = process.argv[2]!
const t = () => performance.now()
for (const mode of ['memfs', 'file-blob', 'mem-blob', 'mem-noext', 'memfs', 'file-blob', 'memfs', 'file-blob']) {
  const d = await mkdtemp(join(tmpdir(), 'cb-'))
  let s = t()
  const blob = mode === 'file-blob' ? await openAsBlob(tar) : new Blob([new Uint8Array(await readFile(tar))])
  const read = t() - s; s = t()
  const db = await PGlite.create(mode === 'memfs' ? undefined : join(d, 'pg'), { extensions: mode === 'mem-noext' ? { vector } : { vector, pgcrypto }, loadDataDir: blob })
  const create = t() - s; s = t()
  await db.query('select 1')
  console.log(mode, 'read', Math.round(read), 'create', Math.round(create), 'q', Math.round(t() - s))
  await db.close(); await rm(d, { recursive: true })
}
const d = await mkdtemp(join(tmpdir(), 'cb-'))
let s = t()
const e = await startEmbeddedDatabase({ dataDir: d, loadDataDir: await openAsBlob(tar) })
console.log('start', Math.round(t() - s)); s = t()
const sql = postgres(e.url, embeddedClientOptions)
await sql`select 1`
console.log('first query via socket', Math.round(t() - s)); s = t()
await sql`select 1`
console.log('second', Math.round(t() - s))
await sql.end(); await e.close(); await rm(d, { recursive: true })
