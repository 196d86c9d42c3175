/**
 * The local driver: objects are files under `<dataDir>/uploads/<org>/<doc>`, and presigned
 * addresses point at this service's own /uploads routes (upload-routes.ts), authorized by a signed
 * query string (signed-url.ts). For one machine and development; production with several
 * instances uses the S3 driver.
 */
import { open, rename, rm, stat, unlink, type FileHandle } from 'node:fs/promises';
import { syncPath } from './sync-path.ts';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { expiryOf, ObjectNotFoundError, parseKey, type StorageDriver } from './driver.ts';
import { signedQuery, type SignedTarget } from './signed-url.ts';

export interface LocalDriverOptions {
  dataDir: string;
  /** The service's public base URL (config.publicUrl), without a trailing slash. */
  publicUrl: string;
  /** HMAC key of the signed addresses (resolveSecret). */
  secret: string;
}

export class LocalDriver implements StorageDriver {
  readonly name = 'local';
  /** The directory holding the uploads, `<dataDir>/uploads`. */
  readonly location: string;
  readonly #publicUrl: string;
  readonly #secret: string;

  constructor(options: LocalDriverOptions) {
    this.location = join(options.dataDir, 'uploads');
    this.#publicUrl = options.publicUrl.replace(/\/+$/, '');
    this.#secret = options.secret;
  }

  /** The route path of a key, `/uploads/<org>/<doc>` (what the signature covers). */
  static routePath(key: string): string {
    const { organizationId, documentId } = parseKey(key);
    return `/uploads/${organizationId}/${documentId}`;
  }

  /** The file of a key; throws InvalidKeyError for anything but `<id>/<id>`. */
  filePath(key: string): string {
    const { organizationId, documentId } = parseKey(key);
    return join(this.location, organizationId, documentId);
  }

  /**
   * Where an upload may be staged until commitUpload moves it to filePath: `.<doc>.upload` beside
   * it (the dot keeps it from ever being a key). The upload route checks that the document is
   * pending before it writes, but a PUT that started while it was pending can finish after
   * documents.complete: written here, it cannot replace a ready document's bytes.
   */
  uploadPath(key: string): string {
    const { organizationId, documentId } = parseKey(key);
    return join(this.location, organizationId, `.${documentId}.upload`);
  }

  async presignUpload(key: string, o: { contentType: string; size: number; expiresInSeconds: number; now: Date }) {
    if (!Number.isSafeInteger(o.size) || o.size < 0) throw new RangeError(`size must be a byte count, got ${o.size}`);
    const expiresAt = expiryOf(o.now, o.expiresInSeconds);
    // The Content-Type is signed, not sent in the query: the route checks the PUT's header against it, as S3 does.
    const url = this.#url({ method: 'PUT', path: LocalDriver.routePath(key), expires: expiresAt.getTime() / 1000, size: o.size, contentType: o.contentType });
    return { url, headers: { 'content-type': o.contentType, 'content-length': String(o.size) }, expiresAt };
  }

  /** The name and type are not in the address: the route reads them from the document row. */
  async presignDownload(key: string, o: { filename: string; contentType: string; expiresInSeconds: number; now: Date }) {
    const expiresAt = expiryOf(o.now, o.expiresInSeconds);
    return { url: this.#url({ method: 'GET', path: LocalDriver.routePath(key), expires: expiresAt.getTime() / 1000 }), expiresAt };
  }

  /**
   * Moves a staged upload (uploadPath) into place, if there is one, and measures the file. Before it
   * answers (and documents.complete marks the document ready), the file's bytes and its name are
   * on the disk: fsync of the file, then of its directory (the upload route's rename and this one
   * happen there) and of the directories above it that a first upload may have created. Without
   * them a power cut could leave a ready document whose file is empty or missing.
   */
  async commitUpload(key: string): Promise<{ size: number } | null> {
    const path = this.filePath(key);
    try {
      await rename(this.uploadPath(key), path);
    } catch (error) {
      if (!isMissing(error)) throw error;
    }
    let handle: FileHandle;
    try {
      handle = await open(path, 'r');
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
    let size: number;
    try {
      const stats = await handle.stat();
      if (!stats.isFile()) return null;
      size = stats.size;
      await handle.sync();
    } finally {
      await handle.close();
    }
    const directory = dirname(path);
    for (const dir of [directory, this.location, dirname(this.location)]) await syncPath(dir);
    return { size };
  }

  async stat(key: string): Promise<{ size: number } | null> {
    try {
      const stats = await stat(this.filePath(key));
      return stats.isFile() ? { size: stats.size } : null;
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  }

  async read(key: string): Promise<Readable> {
    try {
      // Opened here, so a missing file rejects now rather than erroring the stream later.
      const handle = await open(this.filePath(key), 'r');
      return handle.createReadStream();
    } catch (error) {
      if (isMissing(error)) throw new ObjectNotFoundError(key);
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    await Promise.all([rm(this.filePath(key), { force: true }), rm(this.uploadPath(key), { force: true })]);
  }

  async deleteMany(keys: string[]): Promise<{ failed: string[] }> {
    const failed: string[] = [];
    // A few at a time: an organization can hold many thousands of files.
    const queue = [...keys];
    const worker = async () => {
      for (let key = queue.shift(); key !== undefined; key = queue.shift()) {
        for (const path of [this.filePath.bind(this), this.uploadPath.bind(this)]) {
          try {
            await unlink(path(key));
          } catch (error) {
            if (!isMissing(error)) {
              failed.push(key);
              break;
            }
          }
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(8, keys.length) }, worker));
    return { failed };
  }

  #url(target: SignedTarget): string {
    return `${this.#publicUrl}${target.path}?${signedQuery(this.#secret, target)}`;
  }
}

export function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
