/**
 * Spans of the storage (issue 41, docs/observability.md): `storage.<operation>` around each call
 * of a StorageDriver (storage.presignUpload, storage.commitUpload, storage.read, ...), with the
 * driver (`app.storage.driver`: local or s3), the key (`app.storage.key`: `<org id>/<document id>`,
 * ids only) and the bytes where they are known. Never an address: a presigned URL carries its
 * signature. A failure is named by its type or code (ENOENT, StorageUnavailableError), not its
 * message. `read`'s span lasts until its stream ends, fails or is destroyed, so it covers the
 * transfer, not only the opening.
 *
 * The methods are replaced on the driver itself, so it keeps its class (`driver.name === 'local'`
 * still narrows to LocalDriver); each checks `tracingOn()` first and, while tracing is off, only
 * calls the driver's own.
 */
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { SpanKind, SpanStatusCode, type Attributes, type Span } from '@opentelemetry/api';
import { tracer, tracingOn } from '../telemetry/tracing.ts';
import type { StorageDriver } from './driver.ts';

type Operation = 'presignUpload' | 'presignDownload' | 'commitUpload' | 'stat' | 'read' | 'delete' | 'deleteMany';

/** `driver` with a span around each of its operations while tracing is on; answers the same object. */
export function withStorageSpans<D extends StorageDriver>(driver: D): D {
  const own: StorageDriver = driver;
  const call = {
    presignUpload: own.presignUpload.bind(own),
    presignDownload: own.presignDownload.bind(own),
    commitUpload: own.commitUpload.bind(own),
    stat: own.stat.bind(own),
    read: own.read.bind(own),
    delete: own.delete.bind(own),
    deleteMany: own.deleteMany.bind(own),
  } satisfies Pick<StorageDriver, Operation>;
  // The bucket is across the network; local files are this process's own work.
  const kind = own.name === 's3' ? SpanKind.CLIENT : SpanKind.INTERNAL;
  const spanned = <T>(operation: Operation, attributes: Attributes, run: () => Promise<T>, answered?: (span: Span, value: T) => void): Promise<T> =>
    tracer.startActiveSpan(`storage.${operation}`, { kind, attributes: { 'app.storage.driver': own.name, ...attributes } }, async (span) => {
      try {
        const value = await run();
        answered?.(span, value);
        return value;
      } catch (error) {
        storageFailure(span, error);
        throw error;
      } finally {
        span.end();
      }
    });
  const sized = (span: Span, value: { size: number } | null) => {
    span.setAttribute('app.storage.found', value !== null);
    if (value) span.setAttribute('app.storage.bytes', value.size);
  };
  const traced: Pick<StorageDriver, Operation> = {
    presignUpload: (key, o) =>
      tracingOn()
        ? spanned('presignUpload', { 'app.storage.key': key, 'app.storage.bytes': o.size, 'app.storage.expires_in_s': o.expiresInSeconds }, () => call.presignUpload(key, o))
        : call.presignUpload(key, o),
    presignDownload: (key, o) =>
      tracingOn() ? spanned('presignDownload', { 'app.storage.key': key, 'app.storage.expires_in_s': o.expiresInSeconds }, () => call.presignDownload(key, o)) : call.presignDownload(key, o),
    commitUpload: (key) => (tracingOn() ? spanned('commitUpload', { 'app.storage.key': key }, () => call.commitUpload(key), sized) : call.commitUpload(key)),
    stat: (key) => (tracingOn() ? spanned('stat', { 'app.storage.key': key }, () => call.stat(key), sized) : call.stat(key)),
    read: (key) => (tracingOn() ? readSpan(key, kind, own.name, () => call.read(key)) : call.read(key)),
    delete: (key) => (tracingOn() ? spanned('delete', { 'app.storage.key': key }, () => call.delete(key)) : call.delete(key)),
    deleteMany: (keys) =>
      tracingOn()
        ? spanned(
            'deleteMany',
            { 'app.storage.keys': keys.length },
            () => call.deleteMany(keys),
            (span, { failed }) => span.setAttribute('app.storage.failed', failed.length),
          )
        : call.deleteMany(keys),
  };
  return Object.assign(driver, traced);
}

/** `storage.read`: from the call until the stream it answers ends, fails or is destroyed. */
function readSpan(key: string, kind: SpanKind, driver: StorageDriver['name'], read: () => Promise<Readable>): Promise<Readable> {
  const span = tracer.startSpan('storage.read', { kind, attributes: { 'app.storage.driver': driver, 'app.storage.key': key } });
  return read().then(
    (stream) => {
      followStream(span, stream);
      return stream;
    },
    (error: unknown) => {
      storageFailure(span, error);
      span.end();
      throw error;
    },
  );
}

/**
 * Ends `span` with the stream: at its end, or at its close after an error or a destroy before the
 * end. Only 'end' and 'close' listeners, which change nothing of how the stream flows, and no
 * 'error' listener, which would swallow an error its reader does not handle.
 */
function followStream(span: Span, stream: Readable): void {
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    const bytes = bytesOf(stream);
    if (bytes !== undefined) span.setAttribute('app.storage.bytes', bytes);
    if (stream.errored) storageFailure(span, stream.errored);
    else if (!stream.readableEnded) span.setAttribute('app.storage.read.completed', false);
    span.end();
  };
  stream.once('end', end);
  stream.once('close', end);
}

/** A file stream counts what it read; an S3 body (an http.IncomingMessage) says its length. */
function bytesOf(stream: Readable): number | undefined {
  const { bytesRead } = stream as { bytesRead?: unknown };
  if (typeof bytesRead === 'number') return bytesRead;
  const length = Number((stream as Partial<IncomingMessage>).headers?.['content-length']);
  return Number.isSafeInteger(length) ? length : undefined;
}

/** Marks `span` failed: the error's code (ENOENT) or type, never its message (it can hold a path or the bucket's answer). */
function storageFailure(span: Span, error: unknown): void {
  const code = (error as { code?: unknown } | null)?.code;
  const type = typeof code === 'string' ? code : error instanceof Error ? error.name : typeof error;
  span.setAttribute('error.type', type);
  span.setStatus({ code: SpanStatusCode.ERROR, message: type });
}
