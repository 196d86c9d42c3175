/**
 * Rows of `COPY ... FROM STDIN WITH (FORMAT binary)` for bench/large-data.ts (PostgreSQL's
 * documentation, COPY, "Binary Format"): a header, then per row a field count and each field as
 * its length and the type's binary send format, then a trailer. Binary, because the text form of
 * 384 floats per chunk costs more to print and parse than the rest of the row together.
 */
import { once } from 'node:events';
import type { Writable } from 'node:stream';

/** The types this writer encodes, by the column's type (pgvector's `vector` sends int16 dimensions, int16 unused, float4 each). */
export type Field = { text: string | null } | { int4: number | null } | { int8: string | null } | { timestamptz: Date } | { textArray: string[] | null } | { oid: number } | { vector: Float32Array };

const HEADER = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)]);
const TRAILER = Buffer.from([0xff, 0xff]);
const TEXT_OID = 25;
/** 2000-01-01 UTC, PostgreSQL's epoch, in ms since 1970. */
const PG_EPOCH_MS = 946_684_800_000;
const FLUSH_BYTES = 1 << 20;

/** A binary COPY in progress on `stream` (postgres.js `sql\`copy ... from stdin\`.writable()`), written with back-pressure. */
export class BinaryCopy {
  private readonly stream: Writable;
  private parts: Buffer[] = [HEADER];
  private size = HEADER.length;
  rows = 0;

  constructor(stream: Writable) {
    this.stream = stream;
  }

  async row(fields: readonly Field[]): Promise<void> {
    const head = Buffer.alloc(2);
    head.writeInt16BE(fields.length, 0);
    this.push(head);
    for (const field of fields) this.push(encode(field));
    this.rows++;
    if (this.size >= FLUSH_BYTES) await this.flush();
  }

  /** Sends what is left and the trailer; resolves once the server has taken the COPY. */
  async end(): Promise<void> {
    this.push(TRAILER);
    await this.flush();
    await new Promise<void>((resolve, reject) => this.stream.end((error?: Error | null) => (error ? reject(error) : resolve())));
  }

  private push(buffer: Buffer): void {
    this.parts.push(buffer);
    this.size += buffer.length;
  }

  private async flush(): Promise<void> {
    const buffer = Buffer.concat(this.parts, this.size);
    this.parts = [];
    this.size = 0;
    if (!this.stream.write(buffer)) await once(this.stream, 'drain');
  }
}

function encode(field: Field): Buffer {
  if ('text' in field) return field.text === null ? NULL : sized(Buffer.from(field.text));
  if ('int4' in field) {
    if (field.int4 === null) return NULL;
    const buffer = Buffer.alloc(8);
    buffer.writeInt32BE(4, 0);
    buffer.writeInt32BE(field.int4, 4);
    return buffer;
  }
  if ('int8' in field) {
    if (field.int8 === null) return NULL;
    const buffer = Buffer.alloc(12);
    buffer.writeInt32BE(8, 0);
    buffer.writeBigInt64BE(BigInt(field.int8), 4);
    return buffer;
  }
  if ('timestamptz' in field) {
    const buffer = Buffer.alloc(12);
    buffer.writeInt32BE(8, 0);
    buffer.writeBigInt64BE(BigInt(field.timestamptz.getTime() - PG_EPOCH_MS) * 1000n, 4);
    return buffer;
  }
  if ('oid' in field) {
    const buffer = Buffer.alloc(8);
    buffer.writeInt32BE(4, 0);
    buffer.writeUInt32BE(field.oid, 4);
    return buffer;
  }
  if ('vector' in field) {
    const buffer = Buffer.alloc(8 + 4 * field.vector.length);
    buffer.writeInt32BE(4 + 4 * field.vector.length, 0);
    buffer.writeInt16BE(field.vector.length, 4);
    buffer.writeInt16BE(0, 6);
    let at = 8;
    for (const x of field.vector) at = buffer.writeFloatBE(x, at);
    return buffer;
  }
  return textArray(field.textArray);
}

const NULL = (() => {
  const buffer = Buffer.alloc(4);
  buffer.writeInt32BE(-1, 0);
  return buffer;
})();

function sized(bytes: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeInt32BE(bytes.length, 0);
  return Buffer.concat([length, bytes]);
}

/** A one-dimensional text[] without nulls: dimensions, has-null flag, element type, then length and lower bound of the one dimension. */
function textArray(values: string[] | null): Buffer {
  if (values === null) return NULL;
  const head = Buffer.alloc(20);
  head.writeInt32BE(1, 0);
  head.writeInt32BE(0, 4);
  head.writeUInt32BE(TEXT_OID, 8);
  head.writeInt32BE(values.length, 12);
  head.writeInt32BE(1, 16);
  return sized(Buffer.concat([head, ...values.map((value) => sized(Buffer.from(value)))]));
}
