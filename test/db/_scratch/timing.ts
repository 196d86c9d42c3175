// Measures what global-setup and createTestDatabase do, step by step.
import { openAsBlob } from 'node:fs'
import { mkdtemp, writeFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { embeddedClientOptions, openDatabase } from '../../../src/db/connection.ts'
import { startEmbeddedDatabase } from '../../../src/db/embedded.ts'
import { migrate } from '../../../src/db/migrations.ts'
const t = () => performance.now()
const dir = await mkdtemp(join(tmpdir(), 'timing-'))
let s = t()
const e = await startEmbeddedDatabase({ dataDir: join(dir, 'data') })
console.log('initdb+start', Math.round(t() - s)); s = t()
const sql = postgres(e.url, embeddedClientOptions)
console.log('migrated', await migrate(sql), Math.round(t() - s)); s = t()
await sql.end()
const blob = await e.dumpDataDir()
await writeFile(join(dir, 't.tar'), new Uint8Array(await blob.arrayBuffer()))
console.log('dump+write', Math.round(t() - s), blob.size); s = t()
await e.close()
console.log('close', Math.round(t() - s))
for (let i = 0; i < 4; i++) {
  s = t()
  const d = await mkdtemp(join(tmpdir(), 'clone-'))
  const db = await openDatabase({ dataDir: d, loadDataDir: await openAsBlob(join(dir, 't.tar')) })
  await db.ping()
  const open = t() - s
  await db.close()
  console.log('clone+ping', Math.round(open), 'close', Math.round(t() - s - open))
  await rm(d, { recursive: true })
}
// stress: many rounds of heavy concurrency on one clone
const d = await mkdtemp(join(tmpdir(), 'stress-'))
const db = await openDatabase({ dataDir: d, loadDataDir: await openAsBlob(join(dir, 't.tar')) })
await db.sql`create table s (id int primary key, v text)`
s = t()
let n = 0
for (let round = 0; round < 5; round++) {
  await Promise.all(Array.from({ length: 2000 }, async (_, i) => {
    const id = round * 10000 + i
    if (i % 3 === 0) await db.sql.begin(async (tx) => { await tx`insert into s values (${id}, ${'x'.repeat(i % 300)})`; await tx`select * from s where id = ${id}` })
    else if (i % 3 === 1) { const [r] = await db.sql`select ${id}::int as id`; if (r!.id !== id) throw new Error('mixed up') }
    else await db.sql`select * from nope`.catch(() => undefined)
    n++
  }))
}
console.log('stress ops', n, Math.round(t() - s), 'ms', (await db.sql`select count(*)::int c from s`)[0])
await db.close()
await rm(d, { recursive: true }); await rm(dir, { recursive: true })
