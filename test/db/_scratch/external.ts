import { openDatabase } from '../../../src/db/connection.ts'
const db = await openDatabase({ databaseUrl: 'postgres://postgres:secret@127.0.0.1:55432/postgres', dataDir: '/nonexistent', logger: { info: (o, m) => console.log(m, o) } })
console.log(db.kind, db.sql.options.max)
await db.ping()
await Promise.all([db.close(), db.close()])
console.log('closed')
