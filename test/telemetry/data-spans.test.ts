/**
 * Spans of the database, the storage and Stripe (issue 41; src/db/query-spans.ts,
 * src/storage/storage-spans.ts, src/billing/stripe-spans.ts), as an exporter sends them: tracing is
 * started in this process with the Node SDK exporting OTLP/HTTP JSON to a receiver inside the test.
 * A transaction through the real database module (embedded, or the server of `scripts/test-pg.sh`)
 * is a child of the span it runs in and the parent of its statements; no statement's parameters,
 * no error message quoting one, no presigned address or signature, no API key or customer email
 * reaches the exporter.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import { trace } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stripeClient } from '../../src/billing/stripe-client.ts';
import type { Database } from '../../src/db/connection.ts';
import { querySpanSettings } from '../../src/db/query-spans.ts';
import { retryingTransaction } from '../../src/db/retry-transaction.ts';
import { wrapPool } from '../../src/db/transaction-guard.ts';
import { createStorageDriver } from '../../src/storage/create-driver.ts';
import type { StorageDriver } from '../../src/storage/driver.ts';
import { LocalDriver } from '../../src/storage/local-driver.ts';
import { S3Driver } from '../../src/storage/s3-driver.ts';
import { startTracing, tracer, type Tracing } from '../../src/telemetry/tracing.ts';
import { createTestDatabase } from '../support/database.ts';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.ts';
import { s3Settings, startS3rver, stopS3rver, type RunningS3rver } from '../support/s3.ts';
import { startStripeStandIn, type StripeStandIn } from '../support/stripe-stand-in.ts';

// --- A receiver of OTLP/HTTP JSON (test/support/otlp-receiver.ts) ------------------------------

/** Every span the exporter posted to /v1/traces, and every body as it came (to search for what must not be there). */
let receiver: OtlpReceiver;

/** Sends what the SDK's batch processor holds now; answers every span received so far. */
async function exported(): Promise<ReceivedSpan[]> {
  const provider = trace.getTracerProvider() as { getDelegate?(): { forceFlush?(): Promise<void> } };
  await provider.getDelegate?.().forceFlush?.();
  return receiver.spans;
}

const named = (name: string) => receiver.spans.filter((span) => span.name === name);
const childrenOf = (parent: ReceivedSpan) => receiver.spans.filter((span) => span.traceId === parent.traceId && span.parentSpanId === parent.spanId);
/** Every export so far, as sent. */
const everything = () => receiver.raw.join('\n');
/** Fails, without printing every export, when `text` was sent to the exporter. */
const expectNowhere = (text: string, what = 'a secret') => expect(everything().includes(text), `${what} in an exported span`).toBe(false);

/** The span the work under test runs in; it records nothing of an error (what the caller's span records is not this file's subject). */
const parentSpan = <T>(name: string, fn: () => Promise<T>): Promise<T> => tracer.startActiveSpan(name, (span) => fn().finally(() => span.end()));

// --- Tracing on, in this process ----------------------------------------------------------------

const before: Record<string, string | undefined> = {};
let tracing: Tracing | null = null;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  for (const [name, value] of Object.entries({ ...receiver.env, OTEL_TRACES_EXPORTER: 'otlp' })) {
    before[name] = process.env[name];
    process.env[name] = value;
  }
  tracing = await startTracing('workspace-api-data-spans-test');
  expect(tracing).not.toBeNull();
});

afterAll(async () => {
  await tracing?.shutdown();
  for (const [name, value] of Object.entries(before)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  await receiver?.close();
});

// --- The database -------------------------------------------------------------------------------

/** A statement's parameter that must never reach an exporter, as a password would not. */
const PASSWORD = `hunter2-${randomBytes(8).toString('hex')}`;

describe('database spans', () => {
  let db: Database;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.close());

  it('makes a transaction the child of the span it runs in, and its statements its children, without their text or parameters', async () => {
    const answer = await parentSpan('test.parent', () =>
      db.sql.begin(async (tx) => {
        const [row] = await tx<{ value: string }[]>`select ${PASSWORD}::text as value`;
        await tx.unsafe('select $1::text as value union all select $1::text', [PASSWORD]);
        await tx`with passwords as (select ${PASSWORD}::text as p) select p from passwords where p <> ${PASSWORD}`;
        return row?.value;
      }),
    );
    expect(answer).toBe(PASSWORD);
    await exported();

    const [parent] = named('test.parent');
    const transaction = named('db.transaction').find((span) => span.parentSpanId === parent?.spanId);
    expect(transaction, 'a db.transaction child of the parent span').toBeDefined();
    expect(transaction!.traceId).toBe(parent!.traceId);
    expect(transaction!.attributes).toMatchObject({ 'db.system.name': 'postgresql', 'app.db.embedded': db.kind === 'embedded', 'app.db.transaction.outcome': 'committed' });

    // Through a transaction-mode pooler (make test-pooler) each transaction first sets its timeouts.
    const queries = childrenOf(transaction!)
      .filter((span) => span.name === 'db.query')
      .slice(db.poolMode === 'transaction' ? 1 : 0);
    expect(queries.map((span) => [span.attributes['db.operation.name'], span.attributes['db.response.returned_rows']])).toEqual([
      ['SELECT', 1],
      ['SELECT', 2],
      ['SELECT', 0], // a WITH statement, named by the command the server reported
    ]);
    for (const query of queries) {
      expect(query.attributes['db.system.name']).toBe('postgresql');
      expect(query.attributes).not.toHaveProperty('db.query.text');
    }
    if (db.kind === 'external') expect(transaction!.attributes['db.namespace']).toEqual(expect.any(String));
    expectNowhere(PASSWORD, 'the password parameter');
  });

  it('names a failed statement and its rolled-back transaction by SQLSTATE, never by a message quoting a parameter', async () => {
    // PostgreSQL's message here is: invalid input syntax for type integer: "<the parameter>"
    const failing = parentSpan('test.failing', () => db.sql.begin(async (tx) => tx`select ${PASSWORD}::int as n`));
    await expect(failing).rejects.toThrow(PASSWORD);
    await exported();

    const [parent] = named('test.failing');
    const transaction = childrenOf(parent!).find((span) => span.name === 'db.transaction');
    expect(transaction?.attributes).toMatchObject({ 'app.db.transaction.outcome': 'rolled_back', 'db.response.status_code': '22P02', 'error.type': '22P02' });
    const query = childrenOf(transaction!).at(-1);
    expect(query?.name).toBe('db.query');
    expect(query?.attributes).toMatchObject({ 'db.response.status_code': '22P02', 'error.type': '22P02' });
    expect(query?.status.code).toBe(2); // ERROR
    expectNowhere(PASSWORD, 'the password parameter');
  });

  it('makes spans of pool statements outside any transaction too', async () => {
    await parentSpan('test.pool', async () => {
      await db.sql`select count(*) from organizations where name = ${PASSWORD}`;
    });
    await exported();
    const [parent] = named('test.pool');
    expect(childrenOf(parent!).map((span) => [span.name, span.attributes['db.operation.name'], span.attributes['db.response.returned_rows']])).toEqual([['db.query', 'SELECT', 1]]);
    expectNowhere(PASSWORD, 'the password parameter');
  });

  it('numbers the runs of a transaction run again after a deadlock', async () => {
    let runs = 0;
    await parentSpan('test.retried', () =>
      retryingTransaction(db.sql, async (tx) => {
        await tx`select 1`;
        // As PostgreSQL answers the victim of a deadlock.
        if (++runs === 1) throw Object.assign(new Error('deadlock detected'), { code: '40P01' });
      }),
    );
    await exported();
    const [parent] = named('test.retried');
    const transactions = childrenOf(parent!).filter((span) => span.name === 'db.transaction');
    expect(transactions.map((span) => [span.attributes['app.db.transaction.attempt'], span.attributes['app.db.transaction.outcome'], span.attributes['error.type']])).toEqual([
      [1, 'rolled_back', '40P01'],
      [2, 'committed', undefined],
    ]);
  });

  it('adds the statement text, with placeholders for its parameters, only when asked to', async () => {
    const withText = wrapPool(db.sql, { guard: false, spans: querySpanSettings({ embedded: db.kind === 'embedded', queryText: true }) });
    await parentSpan('test.text', async () => {
      await withText`select ${PASSWORD}::text   as value`;
    });
    await exported();
    const [parent] = named('test.text');
    // The pool of the database module traces it once more, without its text.
    const texts = childrenOf(parent!).map((span) => span.attributes['db.query.text']);
    expect(texts).toContain('select $1::text as value');
    expect(texts).toContain(undefined);
    expectNowhere(PASSWORD, 'the password parameter');
  });
});

// --- Storage ------------------------------------------------------------------------------------

const KEY = `org_${randomBytes(4).toString('hex')}/doc_${randomBytes(4).toString('hex')}`;
const BYTES = Buffer.from('%PDF-1.4 a few bytes of a document\n');

/** Checks that no part of a presigned address reached the exporter: not the address, not its query string's values. */
function expectNoAddress(url: string): void {
  expectNowhere(url, 'the presigned address');
  for (const [name, value] of new URL(url).searchParams) if (value.length >= 16) expectNowhere(value, `the ${name} of the address`);
  expect(/X-Amz-Signature|X-Amz-Credential|[?&]signature=/i.test(everything()), 'a signature in an exported span').toBe(false);
}

/** Every operation of `driver`, with `put` uploading what presignUpload allowed; answers the presigned addresses. */
async function exercise(driver: StorageDriver, put: (upload: { url: string; headers: Record<string, string> }) => Promise<void>): Promise<string[]> {
  return parentSpan(`test.storage.${driver.name}`, async () => {
    const upload = await driver.presignUpload(KEY, { contentType: 'application/pdf', size: BYTES.length, expiresInSeconds: 900, now: new Date() });
    await put(upload);
    expect(await driver.commitUpload(KEY)).toEqual({ size: BYTES.length });
    expect(await driver.stat(KEY)).toEqual({ size: BYTES.length });
    expect(await buffer(await driver.read(KEY))).toEqual(BYTES);
    const download = await driver.presignDownload(KEY, { filename: 'Quarterly report.pdf', contentType: 'application/pdf', expiresInSeconds: 900, now: new Date() });
    await driver.delete(KEY);
    expect(await driver.stat(KEY)).toBeNull();
    await expect(driver.read(KEY)).rejects.toThrow();
    expect(await driver.deleteMany([KEY])).toEqual({ failed: [] });
    return [upload.url, download.url];
  });
}

function expectStorageSpans(driver: 'local' | 's3'): void {
  const [parent] = named(`test.storage.${driver}`);
  const operations = receiver.spans.filter((span) => span.traceId === parent!.traceId && span.name.startsWith('storage.'));
  const byName = (name: string) => operations.filter((span) => span.name === name);
  for (const span of operations) expect(span.attributes['app.storage.driver']).toBe(driver);
  expect(byName('storage.presignUpload')[0]?.attributes).toMatchObject({ 'app.storage.key': KEY, 'app.storage.bytes': BYTES.length });
  expect(byName('storage.commitUpload')[0]?.attributes).toMatchObject({ 'app.storage.key': KEY, 'app.storage.bytes': BYTES.length, 'app.storage.found': true });
  expect(byName('storage.stat').map((span) => span.attributes['app.storage.found'])).toContain(false);
  const [read, missing] = byName('storage.read');
  expect(read?.attributes).toMatchObject({ 'app.storage.key': KEY, 'app.storage.bytes': BYTES.length });
  expect(read?.status.code).not.toBe(2);
  expect(missing?.status.code).toBe(2); // ERROR: nothing stored any more
  expect(byName('storage.presignDownload')).toHaveLength(1);
  expect(byName('storage.delete')).toHaveLength(1);
  expect(byName('storage.deleteMany')[0]?.attributes).toMatchObject({ 'app.storage.keys': 1, 'app.storage.failed': 0 });
  // A document's name is the user's: not in a span either.
  expectNowhere('Quarterly report', "the document's name");
}

describe('storage spans', () => {
  let dataDir: string;
  let s3: RunningS3rver | undefined;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'workspace-api-data-spans-'));
  });
  afterAll(async () => {
    await stopS3rver(s3);
    await rm(dataDir, { recursive: true, force: true });
  });

  it('spans every operation of the local driver, its read until the stream ends, with no address or signature', async () => {
    const driver = await createStorageDriver({ dataDir, publicUrl: 'http://127.0.0.1:1', storage: { driver: 'local' } }, randomBytes(32).toString('hex'));
    expect(driver).toBeInstanceOf(LocalDriver);
    const local = driver as LocalDriver;
    // The upload route's work, without the route: the bytes land where it stages them.
    const addresses = await exercise(driver, async () => {
      await mkdir(dirname(local.uploadPath(KEY)), { recursive: true });
      await writeFile(local.uploadPath(KEY), BYTES);
    });
    await exported();
    expectStorageSpans('local');
    for (const url of addresses) expectNoAddress(url);
  });

  it('spans every operation of the S3 driver against s3rver, with no address or signature', async () => {
    s3 = await startS3rver('workspace-api-data-spans-s3rver-');
    const driver = await createStorageDriver({ dataDir, publicUrl: 'http://127.0.0.1:1', storage: s3Settings(`http://127.0.0.1:${s3.port}`) }, 'unused');
    expect(driver).toBeInstanceOf(S3Driver);
    try {
      const addresses = await exercise(driver, async (upload) => {
        const response = await fetch(upload.url, { method: 'PUT', headers: upload.headers, body: BYTES });
        expect(response.status).toBe(200);
      });
      await exported();
      expectStorageSpans('s3');
      for (const url of addresses) expectNoAddress(url);
      expectNowhere('S3RVER', 'the access key');
    } finally {
      (driver as S3Driver).client.destroy();
    }
  });
});

// --- Stripe -------------------------------------------------------------------------------------

describe('Stripe spans', () => {
  let standIn: StripeStandIn;
  beforeAll(async () => {
    standIn = await startStripeStandIn();
  });
  afterAll(() => standIn?.close());

  it("names each call by its resource and method, with the status and Stripe's request id, never the key or the customer's email", async () => {
    const secretKey = `sk_test_${randomBytes(12).toString('hex')}`;
    const email = `buyer-${randomBytes(4).toString('hex')}@example.test`;
    const stripe = await stripeClient({ secretKey, webhookSecret: 'whsec_unused', apiUrl: standIn.url, prices: { pro: {}, team: {} }, maxFreeOrganizationsPerUser: 1 })();
    await parentSpan('test.stripe', async () => {
      const customer = await stripe.customers.create({ name: 'Acme', email });
      await stripe.checkout.sessions.create({ mode: 'subscription', customer: customer.id, line_items: [{ price: 'price_pro_month', quantity: 1 }], success_url: 'https://app.test/ok' });
      await expect(stripe.subscriptions.retrieve('sub_missing')).rejects.toThrow();
    });
    await exported();

    const [parent] = named('test.stripe');
    const calls = childrenOf(parent!);
    expect(calls.map((span) => span.name)).toEqual(['stripe.customers.create', 'stripe.checkout.sessions.create', 'stripe.subscriptions.retrieve']);
    const [created, session, missing] = calls;
    expect(created?.attributes).toMatchObject({ 'http.response.status_code': 200, 'app.stripe.request_id': expect.stringMatching(/^req_/) });
    expect(session?.attributes['http.response.status_code']).toBe(200);
    expect(missing?.attributes).toMatchObject({ 'http.response.status_code': 404, 'app.stripe.error_code': 'resource_missing', 'error.type': 'StripeInvalidRequestError' });
    expect(missing?.status.code).toBe(2);
    expect(standIn.requests.map((request) => request.path)).toContain('/v1/customers');
    expectNowhere(secretKey, 'the API key');
    expectNowhere(email, "the customer's email");
  });
});
