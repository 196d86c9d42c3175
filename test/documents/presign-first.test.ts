/**
 * documents.createUpload signs the upload before it writes the document (issue 40, lows): a storage
 * that cannot sign answers 503 with nothing written. Before, the row was committed first, so the
 * failure left a pending document holding the plan's storage until housekeeping swept it, and the
 * Idempotency-Key recorded an answer the client never got. The same call with the same key then
 * succeeds once, as if the first had not happened.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StorageUnavailableError } from '../../src/storage/driver.ts';
import { STORAGE_UNAVAILABLE } from '../../src/storage/unavailable.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { tenant, type Tenant } from '../jobs/support.ts';

describe('documents.createUpload when the storage cannot sign', () => {
  let server: TestServer;
  let t: Tenant;
  beforeAll(async () => {
    server = await startTestServer();
    t = await tenant(server);
  });
  afterAll(() => server?.close());

  it('answers 503 with nothing written, and the same call with the same key then succeeds once', async () => {
    const storage = server.services.storage;
    const sign = storage.presignUpload.bind(storage);
    const call = () =>
      fetch(`${server.origin}/api/v1/documents`, {
        method: 'POST',
        headers: { ...t.owner.headers, 'content-type': 'application/json', 'idempotency-key': 'presign-first-1' },
        body: JSON.stringify({ organizationId: t.org, workspaceId: t.workspaceId, name: 'notes.txt', contentType: 'text/plain', size: 5 }),
      });
    const documents = async () => (await server.db.sql`select id, status from documents where workspace_id = ${t.workspaceId}`).length;

    storage.presignUpload = () => Promise.reject(new StorageUnavailableError('the signing credentials did not come'));
    let refused: Response;
    try {
      refused = await call();
    } finally {
      storage.presignUpload = sign;
    }
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await refused.json()).toMatchObject({ code: 'SERVICE_UNAVAILABLE', status: 503, message: STORAGE_UNAVAILABLE });
    expect(await documents()).toBe(0);

    const accepted = await call();
    expect(accepted.status).toBe(200);
    const body = (await accepted.json()) as { document: { id: string; status: string } };
    expect(body.document.status).toBe('pending');
    expect(await documents()).toBe(1);
    const replayed = await call();
    expect(replayed.status).toBe(200);
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(((await replayed.json()) as typeof body).document.id).toBe(body.document.id);
    expect(await documents()).toBe(1);
  });
});
