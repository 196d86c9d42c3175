import { openAsBlob } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { openDatabase } from '../../../src/db/connection.ts'
const tar = process.argv[2]!, base = process.argv[3]!
const t = () => performance.now()
for (let i = 0; i < 1; i++) {
  const d = await mkdtemp(join(base, 'shm-'))
  const s = t()
  const db = await openDatabase({ dataDir: d, loadDataDir: await openAsBlob(tar) })
  await db.ping()
  const o = t() - s
  await db.close(); await rm(d, { recursive: true })
  console.log(base, 'clone+ping', Math.round(o), 'close+rm', Math.round(t() - s - o))
}
