/**
 * postgres.js 3.4.9's pool queue never compacted while it stayed non-empty (toolchain.md: a
 * saturated pool decayed from ~23 000 to ~6 500 queries/s). patches/postgres+3.4.9.patch, applied
 * by patch-package at install, compacts the used prefix; this keeps the patched queue's
 * behaviour (order, length, remove) and its memory bounded while it never empties.
 */
import { describe, expect, it } from 'vitest';
// @ts-expect-error: postgres.js's internal module has no types
import Queue from '../../node_modules/postgres/src/queue.js';

interface Q<T> {
  length: number;
  push(x: T): T;
  shift(): T | undefined;
  remove(x: T): T | null;
}

describe('postgres.js pool queue (patched)', () => {
  it('keeps first-in first-out order and its length through compactions, never emptying', () => {
    const queue = (Queue as () => Q<number>)();
    let next = 0;
    let expected = 0;
    for (let i = 0; i < 8; i++) queue.push(next++);
    for (let round = 0; round < 100_000; round++) {
      queue.push(next++);
      expect(queue.shift()).toBe(expected++);
    }
    expect(queue.length).toBe(8);
    const leftovers: number[] = [];
    while (queue.length > 0) leftovers.push(queue.shift()!);
    expect(leftovers).toEqual([...Array(8).keys()].map((i) => expected + i));
  });

  it('removes an element after the prefix was compacted', () => {
    const queue = (Queue as () => Q<string>)();
    for (let i = 0; i < 100; i++) queue.push(`c${i}`);
    for (let i = 0; i < 70; i++) queue.shift();
    expect(queue.remove('c80')).toBe('c80');
    expect(queue.remove('c10')).toBeNull();
    expect(queue.length).toBe(29);
    expect(queue.shift()).toBe('c70');
  });

  it('is the patched file (patch-package ran at install)', async () => {
    const { readFile } = await import('node:fs/promises');
    for (const build of ['src', 'cjs/src']) {
      const text = await readFile(new URL(`../../node_modules/postgres/${build}/queue.js`, import.meta.url), 'utf8');
      expect(text).toContain('xs = xs.slice(index)');
    }
  });
});
