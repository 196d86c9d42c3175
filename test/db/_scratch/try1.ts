import { PGlite } from '@electric-sql/pglite'
import { vector } from '@electric-sql/pglite-pgvector'
import { pgcrypto } from '@electric-sql/pglite/contrib/pgcrypto'
import { PGLiteSocketServer } from '@electric-sql/pglite-socket'
import postgres from 'postgres'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const dir = mkdtempSync(join(tmpdir(), 'exp-'))
let t = performance.now()
const db = await PGlite.create(join(dir, 'pg'), { extensions: { vector, pgcrypto } })
console.log('create', performance.now() - t)
t = performance.now()
const server = new PGLiteSocketServer({ db, port: 0, host: '127.0.0.1', maxConnections: 1 })
await server.start()
console.log('conn', server.getServerConn(), performance.now() - t)
const sql = postgres(`postgres://postgres@${server.getServerConn()}/postgres`, { max: 1, onnotice: () => {} })
console.log(await sql`select version()`)
await sql`create extension if not exists vector`
await sql`create extension if not exists pgcrypto`
console.log(await sql`select gen_random_uuid() as u, digest('x','sha256') as d, '[1,2,3]'::vector <=> '[1,2,4]'::vector as dist`)
console.log(await sql`select current_user, current_database()`)
await sql.end()
await server.stop()
t = performance.now()
const blob = await db.dumpDataDir('none')
console.log('dump', performance.now() - t, blob.size, blob.constructor.name)
await db.close()
t = performance.now()
const db2 = await PGlite.create(join(dir, 'pg2'), { extensions: { vector, pgcrypto }, loadDataDir: blob })
console.log('load', performance.now() - t)
console.log(await db2.query(`select extname from pg_extension`))
await db2.close()
t = performance.now()
const db3 = await PGlite.create(join(dir, 'pg2'), { extensions: { vector, pgcrypto } })
console.log('reopen', performance.now() - t)
console.log(await db3.query(`select extname from pg_extension`))
await db3.close()
