/**
 * The S3 driver: any S3-compatible bucket (AWS, MinIO, R2; s3rver in tests). Clients upload and
 * download straight to and from the bucket through presigned addresses; the API only commits,
 * measures, reads and deletes.
 *
 * Uploads are staged. A presigned PUT cannot be revoked and stays valid for its whole lifetime, so
 * it does not write the document's object `<org>/<doc>` but `staging/<org>/<doc>`, which nothing
 * reads. commitUpload (documents.complete) copies the staged bytes to the document's key and
 * deletes the staged object: a PUT after that only writes a staging object again, and the bytes of
 * a ready document stay what complete measured.
 *
 * Such a late PUT leaves a stray staging object. `delete` and `deleteMany` remove a document's
 * staging object with its object, so it goes with its document, workspace or organization; one
 * PUT after that deletion (within the address's lifetime) is caught only by a lifecycle rule on
 * the bucket that expires objects under `staging/` (after a day, say): configure one.
 *
 * A bucket that cannot be reached or does not answer (refused, reset, no answer within
 * S3_TIMEOUTS, a 5xx or 429 after the SDK's three attempts) is a StorageUnavailableError: the SDK
 * itself has no deadline, so without one a hung endpoint would hold documents.complete forever.
 */
import { CopyObjectCommand, DeleteObjectCommand, DeleteObjectsCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { Readable } from 'node:stream';
import type { S3Settings } from '../config.ts';
import { contentDisposition } from './content-disposition.ts';
import { expiryOf, ObjectNotFoundError, parseKey, StorageUnavailableError, type StorageDriver } from './driver.ts';

/** DeleteObjects takes at most 1000 keys per request. */
export const DELETE_BATCH = 1000;

/** Where uploads to the document `<org>/<doc>` land until commitUpload. */
export const STAGING_PREFIX = 'staging/';

/** The staging key of a document's key (checked). */
export function stagingKey(key: string): string {
  parseKey(key);
  return `${STAGING_PREFIX}${key}`;
}

/**
 * Deadlines of each attempt (the SDK makes three): connecting, and the answer's headers (a body
 * then streams for as long as it keeps coming). S3 answers even a 5 GiB CopyObject's headers at
 * once and keeps the connection alive while it copies.
 */
export const S3_TIMEOUTS = { connectMs: 3_000, answerMs: 10_000 };

export function s3ClientConfig(settings: S3Settings, timeouts: { connectMs: number; answerMs: number } = S3_TIMEOUTS): S3ClientConfig {
  return {
    region: settings.region,
    ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
    forcePathStyle: settings.forcePathStyle,
    ...(settings.accessKeyId && settings.secretAccessKey ? { credentials: { accessKeyId: settings.accessKeyId, secretAccessKey: settings.secretAccessKey } } : {}),
    // Checksums only where S3 requires one (DeleteObjects): by default the SDK would put the
    // checksum of an empty body into presigned PUT addresses, and the real upload would fail it.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // Without throwOnRequestTimeout the SDK only logs a warning when the answer is late.
    requestHandler: { connectionTimeout: timeouts.connectMs, requestTimeout: timeouts.answerMs, throwOnRequestTimeout: true },
  };
}

export class S3Driver implements StorageDriver {
  readonly name = 's3';
  /** The bucket. */
  readonly location: string;
  readonly client: S3Client;
  readonly #bucket: string;

  constructor(settings: S3Settings, client: S3Client = new S3Client(s3ClientConfig(settings))) {
    this.#bucket = settings.bucket;
    this.location = settings.bucket;
    this.client = client;
  }

  /**
   * A PUT to the staging key. Content-Type and Content-Length are signed headers of the address,
   * so the PUT must send exactly these (returned as `headers`): a client cannot store more than it
   * declared.
   */
  async presignUpload(key: string, o: { contentType: string; size: number; expiresInSeconds: number; now: Date }) {
    const staged = stagingKey(key);
    if (!Number.isSafeInteger(o.size) || o.size < 0) throw new RangeError(`size must be a byte count, got ${o.size}`);
    const expiresAt = expiryOf(o.now, o.expiresInSeconds);
    const command = new PutObjectCommand({ Bucket: this.#bucket, Key: staged, ContentType: o.contentType, ContentLength: o.size });
    const url = await getSignedUrl(this.client, command, {
      expiresIn: o.expiresInSeconds,
      signingDate: o.now,
      signableHeaders: new Set(['content-type', 'content-length']),
    }).catch(unavailableOn('presign PUT'));
    return { url, headers: { 'content-type': o.contentType, 'content-length': String(o.size) }, expiresAt };
  }

  async presignDownload(key: string, o: { filename: string; contentType: string; expiresInSeconds: number; now: Date }) {
    parseKey(key);
    const expiresAt = expiryOf(o.now, o.expiresInSeconds);
    const command = new GetObjectCommand({
      Bucket: this.#bucket,
      Key: key,
      ResponseContentDisposition: contentDisposition(o.filename),
      ResponseContentType: o.contentType,
    });
    return { url: await getSignedUrl(this.client, command, { expiresIn: o.expiresInSeconds, signingDate: o.now }).catch(unavailableOn('presign GET')), expiresAt };
  }

  /**
   * Copies the staged upload to the document's key (CopyObject keeps its Content-Type), deletes
   * the staged object, and answers the size stored under the document's key. Nothing staged:
   * either nothing was uploaded (null) or an earlier commit moved it (that object's size), so a
   * complete retried after a failure finds the bytes it committed. Objects up to 5 GiB, S3's limit
   * for both a single PUT and a single copy.
   */
  async commitUpload(key: string): Promise<{ size: number } | null> {
    const staged = stagingKey(key);
    try {
      await this.client.send(new CopyObjectCommand({ Bucket: this.#bucket, Key: key, CopySource: `${this.#bucket}/${staged}` })).catch(unavailableOn('CopyObject'));
    } catch (error) {
      if (!isNotFound(error)) throw error;
      return this.stat(key);
    }
    // A failure here leaves a staging object nothing reads (see the top of this file).
    await this.client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: staged })).catch(() => undefined);
    return this.stat(key);
  }

  async stat(key: string): Promise<{ size: number } | null> {
    parseKey(key);
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.#bucket, Key: key })).catch(unavailableOn('HeadObject'));
      return { size: head.ContentLength ?? 0 };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async read(key: string): Promise<Readable> {
    parseKey(key);
    try {
      const object = await this.client.send(new GetObjectCommand({ Bucket: this.#bucket, Key: key })).catch(unavailableOn('GetObject'));
      // In Node the body is an http.IncomingMessage (a Readable) with the SDK's helpers mixed in.
      if (!object.Body) throw new ObjectNotFoundError(key);
      return object.Body as Readable;
    } catch (error) {
      if (isNotFound(error)) throw new ObjectNotFoundError(key);
      throw error;
    }
  }

  /** Deletes the document's object and its staging object (an upload not committed, or a late PUT). */
  async delete(key: string): Promise<void> {
    const staged = stagingKey(key);
    await Promise.all([key, staged].map((Key) => this.client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key })).catch(unavailableOn('DeleteObject'))));
  }

  /**
   * As `delete` for each key, in DeleteObjects batches; a failed staging object is named by its own
   * key. Rejects with StorageUnavailableError at the first batch the bucket does not answer.
   */
  async deleteMany(keys: string[]): Promise<{ failed: string[] }> {
    const failed: string[] = [];
    const valid: string[] = [];
    for (const key of keys) {
      try {
        valid.push(key, stagingKey(key));
      } catch {
        failed.push(key);
      }
    }
    for (let start = 0; start < valid.length; start += DELETE_BATCH) {
      const batch = valid.slice(start, start + DELETE_BATCH);
      try {
        // Quiet: the answer lists only the keys that failed. A missing key is not an error in S3.
        const answer = await this.client
          .send(
            new DeleteObjectsCommand({
              Bucket: this.#bucket,
              Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
            }),
          )
          .catch(unavailableOn('DeleteObjects'));
        for (const error of answer.Errors ?? []) failed.push(error.Key ?? '(unnamed)');
      } catch (error) {
        // Unreachable: the next batch would fail alike; the caller decides (documents.delete and
        // workspaces.delete answer 503 and keep their rows).
        if (error instanceof StorageUnavailableError) throw error;
        failed.push(...batch);
      }
    }
    return { failed };
  }
}

/** Network errors that mean no answer came (the SDK hands Node's own errors on). */
const NO_ANSWER = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNABORTED']);

/**
 * For a send's catch: an answer that never came, or a 5xx or 429 after the SDK's retries, becomes
 * StorageUnavailableError (naming the operation and keeping the cause); anything else goes on as is.
 */
function unavailableOn(operation: string): (error: unknown) => never {
  return (error) => {
    if (!isUnavailable(error)) throw error;
    throw new StorageUnavailableError(`S3 ${operation} failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  };
}

/**
 * The bucket did not answer, or answered that it cannot serve now (5xx, 429 SlowDown), or no
 * credentials could be had to sign with (an instance's metadata service that did not answer).
 */
function isUnavailable(error: unknown): boolean {
  const e = error as { name?: string; code?: string; $metadata?: { httpStatusCode?: number } } | undefined;
  if (e?.name === 'CredentialsProviderError') return true;
  const status = e?.$metadata?.httpStatusCode;
  if (typeof status === 'number') return status >= 500 || status === 429;
  return e?.name === 'TimeoutError' || (typeof e?.code === 'string' && NO_ANSWER.has(e.code));
}

/** The object is missing (a missing bucket is a configuration fault, not a missing object). */
function isNotFound(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } } | undefined;
  if (e?.name === 'NoSuchBucket') return false;
  return e?.name === 'NotFound' || e?.name === 'NoSuchKey' || e?.$metadata?.httpStatusCode === 404;
}
