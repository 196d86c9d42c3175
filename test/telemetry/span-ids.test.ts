/**
 * The SDK's trace and span ids (src/telemetry/span-ids.ts): W3C's shapes (32 and 16 lowercase hex
 * digits), never all zeros, and random: each byte takes all its values.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { spanIds } from '../../src/telemetry/span-ids.ts';

afterEach(() => vi.restoreAllMocks());

describe('span ids', () => {
  it('are 16- and 8-byte lowercase hex', () => {
    for (let k = 0; k < 1000; k++) {
      expect(spanIds.generateTraceId()).toMatch(/^[0-9a-f]{32}$/);
      expect(spanIds.generateSpanId()).toMatch(/^[0-9a-f]{16}$/);
    }
  });

  it('write each word big-endian, every byte as two digits', () => {
    const words = [0x01020304 / 2 ** 32, 0xa0b0c0d0 / 2 ** 32, 0xff / 2 ** 32, 0xfe000000 / 2 ** 32];
    let k = 0;
    vi.spyOn(Math, 'random').mockImplementation(() => words[k++ % words.length]!);
    expect(spanIds.generateTraceId()).toBe('01020304a0b0c0d0000000fffe000000');
  });

  it('are never all zeros (an invalid id): a zero draw is drawn again', () => {
    const draws = [0, 0, 0.5, 0.25];
    let k = 0;
    vi.spyOn(Math, 'random').mockImplementation(() => draws[k++] ?? 0.75);
    expect(spanIds.generateSpanId()).toBe('8000000040000000');
  });

  it('spread over every value of every byte', () => {
    const seen = Array.from({ length: 16 }, () => new Set<string>());
    for (let k = 0; k < 20_000; k++) {
      const id = spanIds.generateTraceId();
      for (let byte = 0; byte < 16; byte++) seen[byte]!.add(id.slice(2 * byte, 2 * byte + 2));
    }
    for (const values of seen) expect(values.size).toBe(256);
  });
});
