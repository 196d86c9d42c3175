/**
 * The one interface both storage drivers implement (local files under the data directory, or an
 * S3-compatible bucket). Keys are `<organizationId>/<documentId>`; both parts are the service's
 * opaque ids (`org_...`, `doc_...`), so a key can never name a path outside its organization.
 *
 * A method rejects with StorageUnavailableError when the storage cannot be reached or does not
 * answer in time (the S3 driver, after its client's own retries; local files have no such state):
 * the same call may work later. Procedures answer 503 then, jobs retry.
 */
import type { Readable } from 'node:stream';

export interface StorageDriver {
  readonly name: 'local' | 's3';
  /** For system status: the data directory or the bucket. */
  readonly location: string;
  /**
   * An address the client PUTs the bytes to. What arrives there is not the document's object yet:
   * `commitUpload` makes it so (the S3 driver stages uploads under another key; the local upload
   * route writes in place but refuses once the document is ready).
   */
  presignUpload(key: string, o: { contentType: string; size: number; expiresInSeconds: number; now: Date }): Promise<{ url: string; headers: Record<string, string>; expiresAt: Date }>;
  presignDownload(key: string, o: { filename: string; contentType: string; expiresInSeconds: number; now: Date }): Promise<{ url: string; expiresAt: Date }>;
  /**
   * documents.complete: makes the uploaded bytes the stored object of `key` and answers its size,
   * or null when nothing was uploaded (and nothing committed before). Afterwards the upload
   * address, still valid for its lifetime, can no longer change what `stat`, `read` and downloads
   * see. Committing again with nothing new uploaded answers the stored object's size.
   */
  commitUpload(key: string): Promise<{ size: number } | null>;
  /** The stored object's size in bytes, or null when there is none. */
  stat(key: string): Promise<{ size: number } | null>;
  /**
   * Streams the stored object (text extraction later reads it); the reader destroys it when done
   * or failed. Rejects with ObjectNotFoundError when there is none.
   */
  read(key: string): Promise<Readable>;
  /** Deletes the stored object and any upload of it not committed; deleting what does not exist succeeds. */
  delete(key: string): Promise<void>;
  /**
   * Best effort, for many keys (with their uploads not committed, as `delete`): answers the objects
   * that could not be deleted, by the name the storage knows them by (the S3 driver may name a
   * staged upload), and logs nothing itself. Rejects with StorageUnavailableError, trying no more
   * keys, when the storage cannot be reached: some keys may be deleted already (deleting again is
   * harmless).
   */
  deleteMany(keys: string[]): Promise<{ failed: string[] }>;
}

/** One segment of a key: an opaque id such as `org_...` or `doc_...`. */
export const KEY_SEGMENT = /^[a-z0-9_]{1,100}$/;

export class InvalidKeyError extends Error {
  override name = 'InvalidKeyError';
}

export class ObjectNotFoundError extends Error {
  override name = 'ObjectNotFoundError';
  readonly key: string;

  constructor(key: string) {
    super(`No stored object for ${key}.`);
    this.key = key;
  }
}

/**
 * The storage could not be reached or did not answer usably in time (a network error, a timeout,
 * a 5xx or 429 after the client's retries). Nothing about the object is known.
 */
export class StorageUnavailableError extends Error {
  override name = 'StorageUnavailableError';
}

export function isKeySegment(value: string): boolean {
  return KEY_SEGMENT.test(value);
}

/** Splits and checks a key; throws InvalidKeyError for anything but `<id>/<id>`. */
export function parseKey(key: string): { organizationId: string; documentId: string } {
  const parts = key.split('/');
  if (parts.length !== 2 || !isKeySegment(parts[0]!) || !isKeySegment(parts[1]!)) {
    throw new InvalidKeyError(`Not a storage key: ${JSON.stringify(key.slice(0, 210))}`);
  }
  return { organizationId: parts[0]!, documentId: parts[1]! };
}

export function storageKey(organizationId: string, documentId: string): string {
  const key = `${organizationId}/${documentId}`;
  parseKey(key);
  return key;
}

/** `now + seconds`, whole seconds (signed URLs carry unix seconds). */
export function expiryOf(now: Date, expiresInSeconds: number): Date {
  if (!Number.isSafeInteger(expiresInSeconds) || expiresInSeconds <= 0) {
    throw new RangeError(`expiresInSeconds must be a positive integer, got ${expiresInSeconds}`);
  }
  return new Date((Math.floor(now.getTime() / 1000) + expiresInSeconds) * 1000);
}
