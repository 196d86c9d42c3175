import { PGlite } from '@electric-sql/pglite'
const dir = process.argv[2]!
const db = await PGlite.create(dir)
console.log(process.pid, 'opened', (await db.query('select 1 as x')).rows)
await db.exec('create table if not exists t(x int); insert into t values (1)')
await new Promise(r => setTimeout(r, 3000))
console.log(process.pid, (await db.query('select count(*) from t')).rows)
await db.close()
