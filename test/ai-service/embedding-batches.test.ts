/**
 * How the local embedder gathers waiting requests into one batch (embedding-batches.ts), without
 * the model: a FairLine of fake requests, batches taken and finished as embedder.ts does.
 */
import { describe, expect, it } from 'vitest';
import { nextBatch, shareTokens, type BatchPart, type Pending } from '../../src/ai-service/embedding-batches.ts';
import { createFairLine, type FairLine } from '../../src/ai-service/fair-queue.ts';

interface Fake extends Pending {
  name: string;
}

/** A request named `name` of organization `name[0]`, with `count` texts (the longest first). */
function request(name: string, count: number): Fake {
  const texts = Array.from({ length: count }, (_, index) => `${name} text ${index}`);
  return { name, organization: name[0]!, texts, order: texts.map((_, index) => index), sent: 0 };
}

function lineOf(...requests: Fake[]): FairLine<Fake> {
  const line = createFairLine<Fake>((item) => item.organization);
  for (const item of requests) line.push(item.organization, item);
  return line;
}

/** A batch as `name: texts` per part, in the order taken. */
const shape = (parts: BatchPart<Fake>[]) => parts.map((part) => `${part.request.name}:${part.indexes.length}`);

/** Texts per organization in a batch. */
function perOrganization(parts: BatchPart<Fake>[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const part of parts) counts[part.request.organization] = (counts[part.request.organization] ?? 0) + part.indexes.length;
  return counts;
}

/** What embedder.ts does when a batch comes back: the requests it sent the last texts of are finished. */
function done(line: FairLine<Fake>, parts: BatchPart<Fake>[]): void {
  for (const part of parts) if (part.last) line.finished(part.request.organization);
}

describe('nextBatch', () => {
  it.each([
    { case: 'one request alone fills the batch', given: [['a1', 20]], slots: 16, want: ['a1:16'] },
    {
      case: 'less waiting than the batch holds: all of it',
      given: [
        ['a1', 3],
        ['b1', 2],
      ],
      slots: 16,
      want: ['a1:3', 'b1:2'],
    },
    // Round 1: a share of 5 each; round 2: the 3 slots B and C could not use go to A.
    {
      case: 'a backlog takes what the others leave',
      given: [
        ['a1', 200],
        ['b1', 4],
        ['c1', 4],
      ],
      slots: 16,
      want: ['a1:8', 'b1:4', 'c1:4'],
    },
    {
      case: 'small requests of one organization fill its share',
      given: [
        ['a1', 2],
        ['a2', 2],
        ['a3', 2],
        ['b1', 10],
      ],
      slots: 8,
      want: ['a1:2', 'a2:2', 'b1:4'],
    },
    // A share of at least one: the first organizations in turn get a text each, the rest wait.
    {
      case: 'more organizations than slots',
      given: [
        ['a1', 3],
        ['b1', 3],
        ['c1', 3],
        ['d1', 3],
        ['e1', 3],
      ],
      slots: 4,
      want: ['a1:1', 'b1:1', 'c1:1', 'd1:1'],
    },
    // floor(16 / 3) = 5 each, then one left: the first in turn.
    {
      case: 'the slot left over goes to the first in turn',
      given: [
        ['a1', 30],
        ['b1', 30],
        ['c1', 30],
      ],
      slots: 16,
      want: ['a1:6', 'b1:5', 'c1:5'],
    },
  ])('$case: $want', ({ given, slots, want }) => {
    const line = lineOf(...given.map(([name, count]) => request(name as string, count as number)));
    expect(shape(nextBatch(line, slots))).toEqual(want);
  });

  it('sends each request longest first and leaves a request with texts left in the line, finished requests out of it', () => {
    const a1 = request('a1', 10);
    a1.order = [3, 1, 4, 0, 5, 9, 2, 6, 8, 7];
    const b1 = request('b1', 2);
    const line = lineOf(a1, b1);
    const parts = nextBatch(line, 6);
    expect(parts.map((part) => ({ name: part.request.name, indexes: part.indexes, last: part.last }))).toEqual([
      { name: 'a1', indexes: [3, 1, 4, 0], last: false },
      { name: 'b1', indexes: [0, 1], last: true },
    ]);
    expect([a1.sent, b1.sent, line.size(), line.size('a'), line.size('b')]).toEqual([4, 2, 1, 1, 0]);
    done(line, parts);
    expect(nextBatch(line, 6).map((part) => part.indexes)).toEqual([[5, 9, 2, 6, 8, 7]]);
  });

  it('puts a request whose share ran out behind its organization’s other requests', () => {
    const line = lineOf(request('a1', 20), request('a2', 20));
    const batches: string[][] = [];
    for (let parts = nextBatch(line, 16); parts.length > 0; parts = nextBatch(line, 16)) {
      batches.push(shape(parts));
      done(line, parts);
    }
    expect(batches).toEqual([['a1:16'], ['a2:16'], ['a1:4', 'a2:4']]);
  });

  it('serves newcomers within their first batch while a backlog waits, never past their share', () => {
    const line = lineOf(request('a1', 100), request('a2', 100));
    const first = nextBatch(line, 16);
    expect(shape(first)).toEqual(['a1:16']);
    // B and C arrive while A's first batch is with the model.
    line.push('b', request('b1', 4));
    line.push('c', request('c1', 12));
    done(line, first);
    const second = nextBatch(line, 16);
    // Never served, B and C go first with a share of 5 each (C has 12); the slot B leaves is
    // shared in a second round, A's from a1, which its turn put back ahead of a2.
    expect(shape(second)).toEqual(['b1:4', 'c1:6', 'a2:5', 'a1:1']);
    expect(Object.values(perOrganization(second)).every((texts) => texts <= Math.ceil(16 / 3))).toBe(true);
    done(line, second);
    expect(shape(nextBatch(line, 16))).toEqual(['c1:6', 'a2:8', 'a1:2']);
  });

  it('keeps the turns of organizations with long requests after each batch, so none jumps ahead (issue 40)', () => {
    // B has two requests, so its group always has one waiting; A's and C's one request each is
    // taken and put back after every share.
    const line = lineOf(request('a1', 60), request('b1', 30), request('b2', 30), request('c1', 60));
    const extras: string[] = [];
    const leaders: string[] = [];
    for (let batch = 0; batch < 9; batch += 1) {
      const parts = nextBatch(line, 4);
      const counts = perOrganization(parts);
      expect(Object.values(counts).sort()).toEqual([1, 1, 2]);
      extras.push(Object.keys(counts).find((organization) => counts[organization] === 2)!);
      leaders.push(parts[0]!.request.organization);
      done(line, parts);
    }
    // The extra slot and the first place go round. Were A and C forgotten each time they are
    // taken (finished before being put back), they would count as never served and take turns
    // ahead of B, which never would lead.
    expect(extras.join('')).toBe('abcabcabc');
    expect(leaders.join('')).toBe('abcabcabc');
  });

  it('holds one request only when the lane does not mix (the queries’ lane)', () => {
    const line = lineOf(request('a1', 1), request('b1', 2), request('b2', 1));
    expect(shape(nextBatch(line, 4, false))).toEqual(['a1:1']);
    expect(shape(nextBatch(line, 4, false))).toEqual(['b1:2']);
    expect(shape(nextBatch(line, 4, false))).toEqual(['b2:1']);
    expect(nextBatch(line, 4, false)).toEqual([]);
  });

  it('sends nothing of a request removed from the line (its caller went away)', () => {
    const x1 = request('x1', 30);
    const line = lineOf(x1, request('y1', 6));
    const first = nextBatch(line, 16);
    expect(shape(first)).toEqual(['x1:10', 'y1:6']);
    expect(line.remove(x1)).toBe(true);
    done(line, first);
    expect(nextBatch(line, 16)).toEqual([]);
    expect(x1.sent).toBe(10);
  });
});

describe("FairLine's turns", () => {
  it('lists the groups with items waiting in the order take() serves them, and takes from a given group', () => {
    const line = createFairLine<string>((item) => item[0]!);
    for (const item of ['A1', 'A2', 'B1', 'C1']) line.push(item[0]!, item);
    expect(line.turns()).toEqual(['A', 'B', 'C']);
    expect(line.take('B')).toBe('B1');
    expect(line.turns()).toEqual(['A', 'C']);
    expect(line.take('B')).toBeUndefined();
    expect(line.take('Z')).toBeUndefined();
    expect(line.take()).toBe('A1');
    expect(line.turns()).toEqual(['C', 'A']);
  });

  it('keeps a group’s turn when a taken item is put back, before or after it is finished', () => {
    const line = createFairLine<string>((item) => item[0]!);
    line.push('A', 'A1');
    line.push('B', 'B1');
    expect(line.take()).toBe('A1');
    line.push('A', 'A1');
    line.finished('A');
    expect(line.turns()).toEqual(['B', 'A']);
    // The order the audit found (finished, then pushed): B, served last, is idle for a moment;
    // the line keeps its turn while A, served before it, waits, so it does not come back ahead.
    expect(line.take()).toBe('B1');
    line.finished('B');
    line.push('B', 'B1');
    expect(line.turns()).toEqual(['A', 'B']);
  });
});

describe('shareTokens', () => {
  const parts = (...texts: string[][]): BatchPart<Fake>[] =>
    texts.map((list, at) => {
      const item = request(`r${at}`, list.length);
      item.texts = list;
      return { request: item, indexes: list.map((_, index) => index), last: true };
    });

  it.each([
    { case: 'one request gets the exact count', given: parts(['short', 'a much longer text than the other one']), total: 19, want: [19] },
    { case: 'equal texts share equally', given: parts(['same words'], ['same words']), total: 10, want: [5, 5] },
    { case: 'longer texts get more', given: parts(['x'.repeat(400)], ['x'.repeat(40)]), total: 114, want: [102, 12] },
    { case: 'the shares add up to the total', given: parts(['one'], ['two'], ['three']), total: 10, want: [3, 3, 4] },
  ])('$case', ({ given, total, want }) => {
    const shares = shareTokens(total, given);
    expect(shares).toEqual(want);
    expect(shares.reduce((sum, value) => sum + value, 0)).toBe(total);
  });
});
