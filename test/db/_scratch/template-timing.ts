import { mkdtemp, rm } from 'node:fs/promises'
import { join } from 'node:path'
import postgres from 'postgres'
import { embeddedClientOptions } from '../../../src/db/connection.ts'
import { startEmbeddedDatabase } from '../../../src/db/embedded.ts'
import { migrate } from '../../../src/db/migrations.ts'
const base = process.argv[2]!
const dir = await mkdtemp(join(base, 'tt-'))
const s = performance.now()
const e = await startEmbeddedDatabase({ dataDir: join(dir, 'data') })
const a = performance.now() - s
const sql = postgres(e.url, embeddedClientOptions); await migrate(sql); await sql.end()
const blob = await e.dumpDataDir(); await e.close()
console.log(base, 'start', Math.round(a), 'total', Math.round(performance.now() - s), blob.size)
await rm(dir, { recursive: true })
