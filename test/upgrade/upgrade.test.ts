/**
 * Issue 37, item 4: the previous release (releases/previous.json) serves while this tree's
 * `migrate` runs, then both serve, then this tree alone, on PostgreSQL 15 with a workspace of
 * UPGRADE_CHUNKS chunks (100 000 by default) under load: no 5xx, no transport error, nothing
 * slower than 2 s while `migrate` runs, and every job succeeds (verdict.ts).
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { numberSetting, runAndPrint, upgradeServer } from './settings.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

describe('an upgrade from the previous release', () => {
  let server: Awaited<ReturnType<typeof upgradeServer>>;
  beforeAll(async () => {
    server = await upgradeServer();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('serves without an error while the new release migrates, joins and takes over', async () => {
    const previous = process.env.UPGRADE_PREVIOUS_RELEASE;
    if (!previous) throw new Error('UPGRADE_PREVIOUS_RELEASE is not set: run make test-upgrade (scripts/test-upgrade.sh prepares the previous release)');
    const phase = numberSetting('UPGRADE_PHASE_S', 20);
    const result = await runAndPrint('upgrade', {
      serverUrl: server.url,
      old: { name: 'old', dir: previous },
      new: { name: 'new', dir: root },
      sizes: [numberSetting('UPGRADE_CHUNKS', 100_000), 2_000, 2_000, 2_000],
      clients: numberSetting('UPGRADE_CLIENTS', 3),
      seconds: { old: phase, mixed: phase, new: phase },
    });
    expect(result.verdict.failures).toEqual([]);
  });
});
