/**
 * The S3 driver against s3rver, an S3-compatible server started here on a loopback port in a temp
 * directory. s3rver does not check signatures (toolchain.md), so this proves the driver's requests
 * and the shape of its addresses; signature enforcement is tested on the local driver.
 */
import { randomBytes } from 'node:crypto';
import { buffer } from 'node:stream/consumers';
import { DeleteObjectsCommand, HeadObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { contentDisposition } from '../../src/storage/content-disposition.ts';
import { ObjectNotFoundError } from '../../src/storage/driver.ts';
import { createStorageDriver } from '../../src/storage/create-driver.ts';
import { S3Driver, stagingKey } from '../../src/storage/s3-driver.ts';
import { BUCKET, s3Settings, startS3rver, stopS3rver, type RunningS3rver } from '../support/s3.ts';

const now = new Date('2026-11-20T10:00:00Z');
let server: RunningS3rver;
let driver: S3Driver;

beforeAll(async () => {
  server = await startS3rver('workspace-api-s3rver-');
  const made = await createStorageDriver(
    {
      dataDir: server.dir,
      publicUrl: 'http://127.0.0.1:1',
      storage: s3Settings(`http://127.0.0.1:${server.port}`),
    },
    'unused-by-the-s3-driver',
  );
  if (!(made instanceof S3Driver)) throw new Error('expected the S3 driver');
  driver = made;
});

afterAll(async () => {
  driver?.client.destroy();
  await stopS3rver(server);
});

/** PUTs through a presigned address the way a client would: the returned headers, nothing else. */
async function putTo(url: string, headers: Record<string, string>, bytes: Buffer): Promise<void> {
  const response = await fetch(url, { method: 'PUT', headers, body: bytes });
  expect(response.status, await response.text()).toBe(200);
}

/** Stages bytes through a presigned PUT; answers the address, which stays valid. */
async function stage(key: string, bytes: Buffer, contentType = 'application/pdf') {
  const upload = await driver.presignUpload(key, { contentType, size: bytes.length, expiresInSeconds: 900, now: new Date() });
  await putTo(upload.url, upload.headers, bytes);
  return upload;
}

/** Uploads and commits, as createUpload, the client's PUT and complete do. */
async function upload(key: string, bytes: Buffer, contentType = 'application/pdf'): Promise<void> {
  await stage(key, bytes, contentType);
  expect(await driver.commitUpload(key)).toEqual({ size: bytes.length });
}

/** Whether an object exists under this exact bucket key (staging keys included). */
async function exists(bucketKey: string): Promise<boolean> {
  try {
    await driver.client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: bucketKey }));
    return true;
  } catch (error) {
    if ((error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return false;
    throw error;
  }
}

describe('S3 driver (s3rver)', () => {
  it('reports its name and bucket', () => {
    expect(driver.name).toBe('s3');
    expect(driver.location).toBe(BUCKET);
  });

  it('presigns a PUT to the staging key whose signature covers content-type and content-length', async () => {
    const upload = await driver.presignUpload('org_a/doc_signed', { contentType: 'text/plain', size: 5, expiresInSeconds: 900, now });
    const url = new URL(upload.url);
    expect(url.pathname).toBe(`/${BUCKET}/staging/org_a/doc_signed`);
    expect(url.searchParams.get('X-Amz-SignedHeaders')?.split(';')).toEqual(expect.arrayContaining(['content-length', 'content-type', 'host']));
    expect(url.searchParams.get('X-Amz-Date')).toBe('20261120T100000Z');
    expect(url.searchParams.get('X-Amz-Expires')).toBe('900');
    // No checksum of an empty body baked into the address (it would fail the real upload on AWS).
    expect([...url.searchParams.keys()].filter((name) => name.toLowerCase().includes('checksum'))).toEqual([]);
    expect(upload.headers).toEqual({ 'content-type': 'text/plain', 'content-length': '5' });
    expect(upload.expiresAt).toEqual(new Date('2026-11-20T10:15:00Z'));
  });

  it('stores through the presigned PUT, then stats, presigns a GET with Content-Disposition, and reads', async () => {
    const bytes = randomBytes(200_000);
    await upload('org_a/doc_one', bytes);
    expect(await driver.stat('org_a/doc_one')).toEqual({ size: bytes.length });

    const name = 'Résumé «final» 日本語 "q".pdf';
    const download = await driver.presignDownload('org_a/doc_one', { filename: name, contentType: 'application/pdf', expiresInSeconds: 300, now: new Date() });
    const response = await fetch(download.url);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/pdf');
    expect(response.headers.get('content-disposition')).toBe(contentDisposition(name));
    const encoded = /filename\*=UTF-8''([^;]+)/.exec(response.headers.get('content-disposition')!)![1]!;
    expect(decodeURIComponent(encoded)).toBe(name);
    expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true);

    expect((await buffer(await driver.read('org_a/doc_one'))).equals(bytes)).toBe(true);
  });

  it('deletes one object, and deleting it again is fine', async () => {
    await upload('org_a/doc_gone', Buffer.from('bye'), 'text/plain');
    await driver.delete('org_a/doc_gone');
    expect(await driver.stat('org_a/doc_gone')).toBeNull();
    await expect(driver.delete('org_a/doc_gone')).resolves.toBeUndefined();
  });

  it('answers null for the size of a missing object and ObjectNotFoundError for reading it', async () => {
    expect(await driver.stat('org_a/doc_never')).toBeNull();
    await expect(driver.read('org_a/doc_never')).rejects.toBeInstanceOf(ObjectNotFoundError);
  });

  it('deletes many: missing keys are not failures, malformed keys are', async () => {
    await upload('org_b/doc_1', Buffer.from('one'), 'text/plain');
    await upload('org_b/doc_2', Buffer.from('two'), 'text/plain');
    const result = await driver.deleteMany(['org_b/doc_1', 'org_b/doc_missing', 'org_b/doc_2', '../etc/passwd']);
    expect(result).toEqual({ failed: ['../etc/passwd'] });
    expect(await driver.stat('org_b/doc_1')).toBeNull();
    expect(await driver.stat('org_b/doc_2')).toBeNull();
  });

  it('deletes many in batches of at most 1000 keys', async () => {
    await upload('org_c/doc_first', Buffer.from('a'), 'text/plain');
    await upload('org_c/doc_last', Buffer.from('b'), 'text/plain');
    const keys = ['org_c/doc_first', ...Array.from({ length: 1500 }, (_, i) => `org_c/doc_${i}`), 'org_c/doc_last'];
    const send = vi.spyOn(driver.client, 'send');
    try {
      expect(await driver.deleteMany(keys)).toEqual({ failed: [] });
      const batches = send.mock.calls.map(([command]) => command).filter((command) => command instanceof DeleteObjectsCommand);
      // Each key with its staging key: 3004 objects.
      expect(batches.map((command) => command.input.Delete?.Objects?.length)).toEqual([1000, 1000, 1000, 4]);
      expect(batches[0]!.input.Delete?.Objects?.slice(0, 2)).toEqual([{ Key: 'org_c/doc_first' }, { Key: 'staging/org_c/doc_first' }]);
    } finally {
      send.mockRestore();
    }
    expect(await driver.stat('org_c/doc_first')).toBeNull();
    expect(await driver.stat('org_c/doc_last')).toBeNull();
  });

  it('refuses keys that are not <id>/<id>', async () => {
    for (const key of ['org_a', 'org_a/../doc', 'org_a/doc/x', 'ORG/doc', '', 'org_a/', '/doc_a', 'staging/org_a/doc_a']) {
      await expect(driver.stat(key), key).rejects.toThrow(/Not a storage key/);
      await expect(driver.commitUpload(key), key).rejects.toThrow(/Not a storage key/);
      await expect(driver.presignUpload(key, { contentType: 'text/plain', size: 1, expiresInSeconds: 60, now }), key).rejects.toThrow(/Not a storage key/);
    }
  });
});

describe("staged uploads: a ready document's bytes cannot be replaced (s3rver)", () => {
  it("keeps an upload out of the document's key until it is committed", async () => {
    const key = 'org_s/doc_staged';
    const bytes = randomBytes(1000);
    await stage(key, bytes, 'text/csv');
    expect(await exists(stagingKey(key))).toBe(true);
    expect(await driver.stat(key)).toBeNull();
    await expect(driver.read(key)).rejects.toBeInstanceOf(ObjectNotFoundError);

    expect(await driver.commitUpload(key)).toEqual({ size: 1000 });
    expect(await exists(stagingKey(key))).toBe(false);
    expect((await buffer(await driver.read(key))).equals(bytes)).toBe(true);
    // Copied with its Content-Type.
    const head = await driver.client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }));
    expect(head.ContentType).toBe('text/csv');
  });

  it('answers null when nothing was uploaded, and the committed size when committed again', async () => {
    expect(await driver.commitUpload('org_s/doc_nothing')).toBeNull();
    await upload('org_s/doc_twice', Buffer.from('twice'), 'text/plain');
    expect(await driver.commitUpload('org_s/doc_twice')).toEqual({ size: 5 });
  });

  it('a PUT after the commit, with the still valid address, changes nothing anyone reads', async () => {
    const key = 'org_s/doc_ready';
    const original = Buffer.from('the bytes complete measured');
    const { url, headers } = await stage(key, original, 'text/plain');
    expect(await driver.commitUpload(key)).toEqual({ size: original.length });

    // The same address again (s3rver checks no signatures, so the same length keeps it honest).
    const replacement = Buffer.from('replaced after complete!!!!');
    expect(replacement.length).toBe(original.length);
    await putTo(url, headers, replacement);
    expect((await buffer(await driver.read(key))).equals(original)).toBe(true);
    const download = await driver.presignDownload(key, { filename: 'a.txt', contentType: 'text/plain', expiresInSeconds: 60, now: new Date() });
    expect(Buffer.from(await (await fetch(download.url)).arrayBuffer()).equals(original)).toBe(true);

    // It left a stray staging object; deleting the document removes both.
    expect(await exists(stagingKey(key))).toBe(true);
    await driver.delete(key);
    expect(await exists(key)).toBe(false);
    expect(await exists(stagingKey(key))).toBe(false);
  });

  it('deleting a pending document removes its staged upload', async () => {
    const key = 'org_s/doc_pending';
    await stage(key, Buffer.from('never completed'), 'text/plain');
    await driver.delete(key);
    expect(await exists(stagingKey(key))).toBe(false);
    expect(await driver.commitUpload(key)).toBeNull();
  });

  it('deleting many removes staged uploads and committed objects alike', async () => {
    await stage('org_t/doc_pending', Buffer.from('pending'), 'text/plain');
    await upload('org_t/doc_ready', Buffer.from('ready'), 'text/plain');
    await stage('org_t/doc_ready', Buffer.from('stray'), 'text/plain');
    expect(await driver.deleteMany(['org_t/doc_pending', 'org_t/doc_ready'])).toEqual({ failed: [] });
    for (const key of ['org_t/doc_pending', 'org_t/doc_ready']) {
      expect(await exists(key)).toBe(false);
      expect(await exists(stagingKey(key))).toBe(false);
    }
  });

  it('names a staging object that could not be deleted by its own key', async () => {
    const send = vi.spyOn(driver.client, 'send').mockImplementation((async (command: unknown) => {
      if (command instanceof DeleteObjectsCommand) return { Errors: [{ Key: 'staging/org_u/doc_1', Code: 'AccessDenied' }] };
      throw new Error('unexpected command');
    }) as never);
    try {
      expect(await driver.deleteMany(['org_u/doc_1'])).toEqual({ failed: ['staging/org_u/doc_1'] });
    } finally {
      send.mockRestore();
    }
  });

  it('does not lose the staged upload when the copy fails', async () => {
    const key = 'org_s/doc_copy_fails';
    await stage(key, Buffer.from('keep me'), 'text/plain');
    const original = driver.client.send.bind(driver.client);
    const send = vi.spyOn(driver.client, 'send').mockImplementation((async (command: unknown) => {
      if ((command as { constructor: { name: string } }).constructor.name === 'CopyObjectCommand') throw Object.assign(new Error('SlowDown'), { name: 'SlowDown', $metadata: { httpStatusCode: 503 } });
      return original(command as never);
    }) as never);
    try {
      await expect(driver.commitUpload(key)).rejects.toThrow('SlowDown');
    } finally {
      send.mockRestore();
    }
    expect(await exists(stagingKey(key))).toBe(true);
    expect(await driver.commitUpload(key)).toEqual({ size: 7 });
  });
});
