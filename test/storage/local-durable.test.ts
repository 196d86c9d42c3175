/**
 * The local driver's commitUpload (what documents.complete calls before it marks a document ready)
 * leaves the file's bytes and its name on the disk: it fsyncs the file, then its directory and the
 * ones above that a first upload creates. Watched by wrapping FileHandle#sync, each call's path
 * read from /proc/self/fd (Linux).
 */
import { mkdir, mkdtemp, open, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { newId } from '../../src/ids.ts';
import { storageKey } from '../../src/storage/driver.ts';
import { LocalDriver } from '../../src/storage/local-driver.ts';

let dataDir: string | undefined;
let restore: (() => void) | undefined;

afterEach(async () => {
  restore?.();
  restore = undefined;
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
  dataDir = undefined;
});

/** Records the path of every FileHandle#sync from now until restore(). */
async function watchSyncs(scratch: string): Promise<string[]> {
  const probe = await open(join(scratch, 'probe'), 'w');
  const prototype = Object.getPrototypeOf(probe) as { sync(this: { fd: number }): Promise<void> };
  await probe.close();
  const original = prototype.sync;
  const synced: string[] = [];
  prototype.sync = async function (this: { fd: number }) {
    const path = await readlink(`/proc/self/fd/${this.fd}`);
    await original.call(this);
    synced.push(path);
  };
  restore = () => (prototype.sync = original);
  return synced;
}

describe.skipIf(process.platform !== 'linux')('the local driver commits an upload durably', () => {
  it('fsyncs the file, then its directory, the uploads directory and the data directory, before it answers', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'workspace-api-local-durable-'));
    const driver = new LocalDriver({ dataDir, publicUrl: 'http://127.0.0.1:3000', secret: 'x'.repeat(32) });
    const key = storageKey(newId('org'), newId('doc'));
    await mkdir(dirname(driver.uploadPath(key)), { recursive: true });
    await writeFile(driver.uploadPath(key), 'hello');
    const synced = await watchSyncs(dataDir);

    expect(await driver.commitUpload(key)).toEqual({ size: 5 });
    expect(synced).toEqual([driver.filePath(key), dirname(driver.filePath(key)), driver.location, dataDir]);

    // Completing again (the commit is idempotent) syncs the file in place as well.
    synced.length = 0;
    expect(await driver.commitUpload(key)).toEqual({ size: 5 });
    expect(synced[0]).toBe(driver.filePath(key));
    // Nothing staged and nothing in place: nothing to sync.
    synced.length = 0;
    expect(await driver.commitUpload(storageKey(newId('org'), newId('doc')))).toBeNull();
    expect(synced).toEqual([]);
  });
});
