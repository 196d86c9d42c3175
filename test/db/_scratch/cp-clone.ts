import { cp, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../../src/db/connection.ts'
const src = process.argv[2]!
const t = () => performance.now()
for (let i = 0; i < 4; i++) {
  const d = await mkdtemp(join(tmpdir(), 'cp-'))
  let s = t()
  await cp(src, join(d, 'pg'), { recursive: true })
  const c = t() - s
  const db = await openDatabase({ dataDir: d })
  await db.ping()
  console.log('cp', Math.round(c), 'cp+open+ping', Math.round(t() - s))
  await db.close(); await rm(d, { recursive: true })
}
