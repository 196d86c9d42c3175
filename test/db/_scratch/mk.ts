import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import postgres from 'postgres'
import { embeddedClientOptions } from '../../../src/db/connection.ts'
import { startEmbeddedDatabase } from '../../../src/db/embedded.ts'
import { migrate } from '../../../src/db/migrations.ts'
const dir = process.argv[2]!
const e = await startEmbeddedDatabase({ dataDir: join(dir, 'data') })
const sql = postgres(e.url, embeddedClientOptions); await migrate(sql); await sql.end()
await writeFile(join(dir, 't.tar'), new Uint8Array(await (await e.dumpDataDir()).arrayBuffer())); await e.close()
