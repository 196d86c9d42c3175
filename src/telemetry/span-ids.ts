/**
 * Trace and span ids for the SDK (NodeSDK's `idGenerator`): random, as its own generator makes
 * them (Math.random, never all zeros), but written as hex in JavaScript. Its generator writes the
 * random words into a Buffer and hex-encodes it in C++: 16 µs of a request span's start on a
 * server idle between requests, 6 µs this way (timed in the app; docs/observability.md "What
 * tracing costs").
 */
import type { NodeSDKConfiguration } from '@opentelemetry/sdk-node';

/** Each byte's two hex digits. */
const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/** `words` random 32-bit words as 8·words lowercase hex digits, not all zero (an invalid id). */
function randomHex(words: number): string {
  let id = '';
  let zero = true;
  for (let k = 0; k < words; k++) {
    const word = (Math.random() * 2 ** 32) >>> 0;
    if (word !== 0) zero = false;
    id += HEX[word >>> 24]! + HEX[(word >>> 16) & 255]! + HEX[(word >>> 8) & 255]! + HEX[word & 255]!;
  }
  return zero ? randomHex(words) : id;
}

export const spanIds: NodeSDKConfiguration['idGenerator'] = {
  /** 16 bytes. */
  generateTraceId: () => randomHex(4),
  /** 8 bytes. */
  generateSpanId: () => randomHex(2),
};
