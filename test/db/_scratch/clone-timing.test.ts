import { it } from 'vitest'
import { createTestDatabase } from '../../support/database.ts'
it('times clones', async () => {
  for (let i = 0; i < 5; i++) {
    const s = performance.now()
    const db = await createTestDatabase()
    await db.ping()
    const o = performance.now() - s
    await db.close()
    console.info('createTestDatabase+ping', Math.round(o), 'close', Math.round(performance.now() - s - o))
  }
}, 60000)
