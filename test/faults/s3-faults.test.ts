/**
 * The S3 bucket down (its port closed) or hung (connections accepted, nothing answered; the S3
 * client's deadlines, cut to 1 s to connect and 2 s to answer here, end each of its three attempts), in front of
 * s3rver through a switchable port. What it proves, nothing lost either way:
 *
 * - documents.complete answers 503 SERVICE_UNAVAILABLE in the error envelope, never a 500 or a
 *   hang; the document stays `pending` and completes once the bucket is back (the commit is idempotent).
 * - workspaces.delete and documents.delete delete the stored objects before the rows: while the
 *   bucket is unreachable they answer 503 and keep the workspace, its documents and every object
 *   (committed and staged uploads), so nothing is left in the bucket that no row records; the same
 *   call once the bucket is back deletes everything. (An object the bucket itself refuses to delete
 *   is logged and does not stop the deletion: test/documents/cascade.test.ts.)
 * - a document.extract job that cannot read its bytes goes back to `queued` and succeeds once the
 *   bucket is back, charged once.
 * - the rest of the API keeps answering throughout (createUpload only signs, so it works too).
 *
 * Those calls go through plain fetch, to see the raw answers while the bucket is down (the contract
 * declares their 503 with Retry-After).
 * Runs on the embedded database (`make test`) and on PostgreSQL (`make test-pg`).
 */
import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3Driver, s3ClientConfig, S3_TIMEOUTS, stagingKey } from '../../src/storage/s3-driver.ts';
import { STORAGE_UNAVAILABLE } from '../../src/storage/unavailable.ts';
import { BUCKET, s3Env, s3Settings, startS3rver, stopS3rver, type RunningS3rver } from '../support/s3.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { tenant, waitForJob, type Tenant } from '../jobs/support.ts';
import { eventually } from './support.ts';
import { expectNoInternalErrors, expectSettledAndBalanced, statusHistory, switchablePort, type SwitchablePort } from './service-faults-support.ts';

/** The bucket's port closed, or hung. */
const MODES = [
  { mode: 'down', state: 'down' },
  { mode: 'hang', state: 'hung' },
] as const;

describe('the S3 bucket down or hung', () => {
  let s3: RunningS3rver;
  let bucketPort: SwitchablePort;
  /** Straight to s3rver, past the switchable port: what the bucket really holds. */
  let inspector: S3Client;
  let driver: S3Driver;
  let server: TestServer;
  let t: Tenant;

  beforeAll(async () => {
    s3 = await startS3rver('workspace-api-s3-faults-');
    bucketPort = await switchablePort(s3.port);
    const settings = s3Settings(bucketPort.url);
    inspector = new S3Client(s3ClientConfig({ ...settings, endpoint: `http://127.0.0.1:${s3.port}` }));
    driver = new S3Driver(settings, new S3Client(s3ClientConfig(settings, { connectMs: 1_000, answerMs: 2_000 })));
    server = await startTestServer({
      env: { ...s3Env(bucketPort.url), RATE_LIMIT_PER_MINUTE: '100000' },
      overrides: { storage: driver, queue: { retryDelaySeconds: 2, pollingSeconds: 0.5 } },
    });
    t = await tenant(server);
  });
  afterAll(async () => {
    await server?.close();
    driver?.client.destroy();
    inspector?.destroy();
    await bucketPort?.close();
    await stopS3rver(s3);
  });

  /** A call outside the contract-checking client, signed in as the tenant's owner. */
  const call = (method: string, path: string) => fetch(`${server.origin}/api/v1${path}`, { method, headers: t.owner.headers });

  async function inBucket(key: string): Promise<boolean> {
    try {
      await inspector.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }));
      return true;
    } catch (error) {
      if ((error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return false;
      throw error;
    }
  }

  /** createUpload and the client's PUT (straight to the bucket); `complete` too unless told otherwise. */
  async function upload(workspaceId: string, name: string, options: { complete?: boolean } = {}) {
    const bytes = `bytes of ${name}`;
    const { document, upload: put } = await t.client.documents.createUpload({ organizationId: t.org, workspaceId, name, contentType: 'text/plain', size: bytes.length });
    expect((await fetch(put.url, { method: 'PUT', headers: put.headers, body: bytes })).status).toBe(200);
    if (options.complete !== false) await t.client.documents.complete({ id: document.id });
    return { id: document.id, key: `${t.org}/${document.id}`, size: bytes.length };
  }

  async function expectUnavailable(response: Response): Promise<void> {
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ code: 'SERVICE_UNAVAILABLE', status: 503, message: STORAGE_UNAVAILABLE });
  }

  /** The rest of the API answers while the bucket does not. */
  async function expectApiAnswers(workspaceId: string): Promise<void> {
    expect((await t.client.workspaces.list({ organizationId: t.org })).map((w) => w.id)).toContain(workspaceId);
    expect((await t.client.documents.list({ organizationId: t.org, workspaceId })).items.length).toBeGreaterThan(0);
    expect((await fetch(`${server.origin}/readyz`)).status).toBe(200);
  }

  it('each attempt of the real client has a deadline (the SDK has none of its own)', () => {
    expect(s3ClientConfig({ driver: 's3', bucket: BUCKET, region: 'us-east-1', endpoint: undefined, forcePathStyle: false, accessKeyId: undefined, secretAccessKey: undefined }).requestHandler).toEqual({
      connectionTimeout: S3_TIMEOUTS.connectMs,
      requestTimeout: S3_TIMEOUTS.answerMs,
      throwOnRequestTimeout: true,
    });
  });

  it.each(MODES)('documents.complete with the bucket $state: 503, the document stays pending and completes once it is back', async ({ mode }) => {
    const document = await upload(t.workspaceId, `complete-${mode}.txt`, { complete: false });
    await bucketPort[mode]();
    try {
      await expectUnavailable(await call('POST', `/documents/${document.id}/complete`));
      expect(await t.client.documents.get({ id: document.id })).toMatchObject({ status: 'pending' });
      // Signing needs no bucket: a new upload can still start.
      await t.client.documents.createUpload({ organizationId: t.org, workspaceId: t.workspaceId, name: 'later.txt', contentType: 'text/plain', size: 1 });
      await expectApiAnswers(t.workspaceId);
    } finally {
      await bucketPort.up();
    }
    expect(await t.client.documents.complete({ id: document.id })).toMatchObject({ status: 'ready', size: document.size });
    expect(await inBucket(document.key)).toBe(true);
    expect(await inBucket(stagingKey(document.key))).toBe(false);
    expect(server.logs.some((line) => line.msg === 'storage unavailable' && line.detail?.includes('S3 CopyObject failed'))).toBe(true);
    expectNoInternalErrors(server.logs);
  });

  it.each(MODES)('workspaces.delete with the bucket $state: 503 and everything kept; the same call once it is back deletes it all', async ({ mode }) => {
    const workspace = await t.client.workspaces.create({ organizationId: t.org, name: `Doomed ${mode}`, slug: `doomed-${mode}` });
    const ready = [await upload(workspace.id, 'a.txt'), await upload(workspace.id, 'b.txt')];
    const staged = await upload(workspace.id, 'c.txt', { complete: false });
    const objects = [...ready.map((d) => d.key), stagingKey(staged.key)];
    for (const key of objects) expect(await inBucket(key)).toBe(true);

    await bucketPort[mode]();
    try {
      await expectUnavailable(await call('DELETE', `/workspaces/${workspace.id}`));
      // Nothing vanished: the workspace, its three documents, and every object they name.
      await expectApiAnswers(workspace.id);
      const [rows] = await server.db.sql<{ count: number }[]>`select count(*)::int as count from documents where workspace_id = ${workspace.id}`;
      expect(rows!.count).toBe(3);
      for (const key of objects) expect(await inBucket(key), key).toBe(true);
    } finally {
      await bucketPort.up();
    }
    expect(await t.client.workspaces.delete({ id: workspace.id })).toEqual({ id: workspace.id });
    expect((await t.client.workspaces.list({ organizationId: t.org })).map((w) => w.id)).not.toContain(workspace.id);
    const [rows] = await server.db.sql<{ count: number }[]>`select count(*)::int as count from documents where workspace_id = ${workspace.id}`;
    expect(rows!.count).toBe(0);
    for (const key of [...objects, staged.key]) expect(await inBucket(key), key).toBe(false);
    expect(server.logs.filter((line) => line.msg === 'stored object survived its deletion' && line.workspaceId === workspace.id)).toEqual([]);
    expectNoInternalErrors(server.logs);
  });

  it.each(MODES)('documents.delete with the bucket $state: 503 and the document kept; the same call once it is back deletes row and object', async ({ mode }) => {
    const document = await upload(t.workspaceId, `delete-${mode}.txt`);
    await bucketPort[mode]();
    try {
      await expectUnavailable(await call('DELETE', `/documents/${document.id}`));
      expect(await t.client.documents.get({ id: document.id })).toMatchObject({ status: 'ready' });
    } finally {
      await bucketPort.up();
    }
    expect(await inBucket(document.key)).toBe(true);
    expect(await t.client.documents.delete({ id: document.id })).toEqual({ id: document.id });
    expect(await inBucket(document.key)).toBe(false);
    const [rows] = await server.db.sql<{ count: number }[]>`select count(*)::int as count from documents where id = ${document.id}`;
    expect(rows!.count).toBe(0);
    expectNoInternalErrors(server.logs);
  });

  it('a document.extract job that cannot read its bytes waits in the queue and succeeds once the bucket is back, charged once', { timeout: 60_000 }, async () => {
    const jobs = await tenant(server);
    const bytes = 'The quarterly report lives in the bucket.';
    const { document, upload: put } = await jobs.client.documents.createUpload({
      organizationId: jobs.org,
      workspaceId: jobs.workspaceId,
      name: 'report.txt',
      contentType: 'text/plain',
      size: bytes.length,
    });
    expect((await fetch(put.url, { method: 'PUT', headers: put.headers, body: bytes })).status).toBe(200);
    await jobs.client.documents.complete({ id: document.id });

    await bucketPort.down();
    let job: Awaited<ReturnType<Tenant['client']['jobs']['create']>>;
    try {
      job = await jobs.client.jobs.create({ organizationId: jobs.org, kind: 'document.extract', documentId: document.id });
      const waiting = await eventually(async () => {
        const current = await jobs.client.jobs.get({ id: job.id });
        return current.status === 'queued' && current.attempt >= 1 ? current : undefined;
      }, 50);
      expect(waiting).toMatchObject({ status: 'queued', error: null });
    } finally {
      await bucketPort.up();
    }
    const done = await waitForJob(jobs, job.id, ['succeeded', 'failed'], 45_000);
    expect(done).toMatchObject({ status: 'succeeded', credits: 1, result: { characters: bytes.length, pages: null } });
    expect(await statusHistory(server.db, job.id)).not.toContain('failed');
    expect(await jobs.client.documents.text({ id: document.id })).toMatchObject({ text: bytes });
    await expectSettledAndBalanced(server.db, jobs.org);
    expectNoInternalErrors(server.logs);
  });
});
