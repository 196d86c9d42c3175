/**
 * The stored document goes to the AI service as a stream (kinds.ts extractStored, client.ts
 * extract: a chunked body, no copy held by the worker). What that must not break:
 *
 * - a document of several megabytes arrives whole: its stored text is exactly what was uploaded;
 * - storage that fails mid-read makes the job retry, attributed to the storage (its own error in
 *   the log, never "The AI service is unavailable"), and the next attempt succeeds, charged once;
 * - a stream over the companion's body limit (counted, a chunked body has no Content-Length) fails
 *   the job with the 413's readable message, and the stream is destroyed either way.
 *
 * The storage is the real local driver; only its `read` is wrapped, to inject the fault. A Proxy
 * keeps `instanceof LocalDriver` true (app.ts mounts the upload route on it) and is pointed at a
 * driver with the server's real address once it listens.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { LocalDriver } from '../../src/storage/local-driver.ts';
import { eventually } from '../faults/support.ts';
import { expectSettledAndBalanced, jobLedgers, statusHistory } from '../faults/service-faults-support.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { tenant, uploadDocument, waitForJob, type Tenant } from './support.ts';

const SECRET = 'streamed-extraction-secret-0123456789';

type Fault = { kind: 'fail-after'; bytes: number; times: number } | { kind: 'pad-to'; bytes: number };

/** The local driver, its reads wrapped: each read's stream is recorded, and faults are per key. */
function wrappedLocalDriver(dataDir: string) {
  let inner = new LocalDriver({ dataDir, publicUrl: 'http://127.0.0.1:1', secret: SECRET });
  const faults = new Map<string, Fault>();
  const reads: { key: string; stream: Readable; source: Readable; destroyed: () => boolean }[] = [];

  async function read(key: string): Promise<Readable> {
    const source = await inner.read(key);
    const fault = faults.get(key);
    let stream: Readable = source;
    if (fault?.kind === 'fail-after' && fault.times > 0) {
      fault.times -= 1;
      stream = failAfter(source, fault.bytes);
    } else if (fault?.kind === 'pad-to') {
      stream = padTo(source, fault.bytes);
    }
    let destroyed = false;
    const destroy = stream.destroy.bind(stream);
    stream.destroy = (error?: Error) => {
      destroyed = true;
      return destroy(error);
    };
    reads.push({ key, stream, source, destroyed: () => destroyed });
    return stream;
  }

  const driver = new Proxy(inner, {
    get(_target, property) {
      if (property === 'read') return read;
      const value = Reflect.get(inner, property, inner) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(inner) : value;
    },
  });
  return {
    driver,
    faults,
    reads,
    /** Once the server listens: signed upload addresses must name its real port. */
    listening(origin: string) {
      inner = new LocalDriver({ dataDir, publicUrl: origin, secret: SECRET });
    },
  };
}

/** The first `limit` bytes of `source`, then an I/O error, as a failing disk gives. */
function failAfter(source: Readable, limit: number): Readable {
  return Readable.from(
    (async function* () {
      let sent = 0;
      for await (const chunk of source as AsyncIterable<Buffer>) {
        const part = chunk.subarray(0, Math.max(0, limit - sent));
        if (part.length > 0) yield part;
        sent += part.length;
        if (sent >= limit) throw Object.assign(new Error('EIO: i/o error, read'), { code: 'EIO' });
      }
    })(),
    { objectMode: false },
  );
}

/** `source`, then spaces up to `total` bytes: a stream longer than anything an upload may store. */
function padTo(source: Readable, total: number): Readable {
  return Readable.from(
    (async function* () {
      let sent = 0;
      for await (const chunk of source as AsyncIterable<Buffer>) {
        sent += chunk.length;
        yield chunk;
      }
      const block = Buffer.alloc(1 << 20, 0x20);
      while (sent < total) {
        const part = block.subarray(0, Math.min(block.length, total - sent));
        sent += part.length;
        yield part;
      }
    })(),
    { objectMode: false },
  );
}

/** `n` bytes of plain ASCII text in numbered lines, so a lost or reordered piece changes it. */
function numberedText(n: number): string {
  const lines: string[] = [];
  let length = 0;
  for (let i = 0; length < n; i += 1) {
    const line = `Line ${String(i).padStart(7, '0')} of the long streamed report.\n`;
    lines.push(line);
    length += line.length;
  }
  return lines.join('').slice(0, n - 1) + '.';
}

describe('a stored document streamed to the AI service', () => {
  let dataDir: string;
  let storage: ReturnType<typeof wrappedLocalDriver>;
  let server: TestServer;
  let t: Tenant;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'workspace-api-streamed-'));
    storage = wrappedLocalDriver(dataDir);
    server = await startTestServer({
      env: { DATA_DIR: dataDir, SECRET, RATE_LIMIT_PER_MINUTE: '100000' },
      overrides: { storage: storage.driver, queue: { retryDelaySeconds: 1, pollingSeconds: 0.5 } },
    });
    storage.listening(server.origin);
    t = await tenant(server);
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  async function extract(text: string, name: string, fault?: (key: string) => Fault, contentType: 'text/plain' | 'text/html' = 'text/plain') {
    const document = await uploadDocument(t, name, contentType, Buffer.from(text));
    if (fault) storage.faults.set(`${t.org}/${document.id}`, fault(`${t.org}/${document.id}`));
    const job = await t.client.jobs.create({ organizationId: t.org, kind: 'document.extract', documentId: document.id });
    const done = await waitForJob(t, job.id, ['succeeded', 'failed'], 90_000);
    return { document, job, done, reads: storage.reads.filter((read) => read.key === `${t.org}/${document.id}`) };
  }

  /**
   * The job's row says failed before the pg-boss handler returns and its queue row completes:
   * wait for the queue, then check the ledgers.
   */
  async function settled() {
    await eventually(async () => (await jobLedgers(server.db, t.org)).every((job) => job.queue.every((state) => state === 'completed')) || undefined, 50);
    await expectSettledAndBalanced(server.db, t.org);
  }

  it('sends a 6 MB document whole: every line of it is in the stored text, in order', { timeout: 120_000 }, async () => {
    // HTML heavy with markup: 6 MB on the wire, its text under the 2 million characters a document may have.
    const lines = Array.from({ length: 40_000 }, (_, i) => `Line ${String(i).padStart(7, '0')}`);
    const style = 'x'.repeat(100);
    const html = `<html><body>${lines.map((line) => `<p class="${style}" title="${style}">${line}</p>\n`).join('')}</body></html>`;
    expect(html.length).toBeGreaterThan(6_000_000);
    const { document, done, reads } = await extract(html, 'long.html', undefined, 'text/html');
    expect(done.error).toBeNull();
    expect(done.status).toBe('succeeded');
    const stored = await t.client.documents.text({ id: document.id });
    expect(stored!.text.match(/Line \d{7}/g)).toEqual(lines);
    expect(reads.length).toBe(1);
    expect(reads[0]!.destroyed()).toBe(true);
  });

  it('retries a read that fails mid-stream as a storage fault, and succeeds next time, charged once', { timeout: 120_000 }, async () => {
    const text = numberedText(2_000_000);
    const since = server.logs.length;
    const { document, job, done, reads } = await extract(text, 'flaky.txt', () => ({ kind: 'fail-after', bytes: 1_000_000, times: 1 }));
    expect(done).toMatchObject({ status: 'succeeded', error: null, attempt: 2, result: { characters: text.length } });
    expect(await statusHistory(server.db, job.id)).not.toContain('failed');
    expect((await t.client.documents.text({ id: document.id }))!.text === text).toBe(true);

    const failures = server.logs.slice(since).filter((line) => line.jobId === job.id && line.msg === 'job run failed');
    expect(failures).toHaveLength(1);
    // The storage's own error, not the AI client's: the fetch it broke is not the service's fault.
    expect(failures[0]).toMatchObject({ retryable: true, attempt: 1, err: { message: 'EIO: i/o error, read', code: 'EIO' } });
    expect(failures[0]!.detail).toBeUndefined();
    expect(JSON.stringify(failures[0])).not.toContain('AI service is unavailable');

    expect(reads.length).toBe(2);
    expect(reads.every((read) => read.destroyed() && read.source.destroyed)).toBe(true);
    await settled();
  });

  it('fails a stream over the extraction limit with the 413 message, and destroys the stream', { timeout: 120_000 }, async () => {
    const { done, reads } = await extract('A short head before a very long tail.', 'padded.txt', () => ({ kind: 'pad-to', bytes: loadConfig({}).ai.extraction.maxBytes + (1 << 20) }));
    expect(done).toMatchObject({ status: 'failed', error: { message: 'The document is too large to read.' }, attempt: 1 });
    expect(reads.length).toBe(1);
    expect(reads[0]!.destroyed()).toBe(true);
    // The file under it too: its handle is not left open by the unread tail (closed once the
    // wrapping generator's return reaches it, a turn or two after the job is marked failed).
    await eventually(async () => reads[0]!.source.destroyed || undefined, 20);
    await settled();
  });
});
