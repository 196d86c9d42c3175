import { describe, expect, it } from 'vitest';
import { decode, encode, WireError } from '../../src/rpc/wire.ts';

describe('the RPC wire format', () => {
  const at = new Date('2026-11-21T09:15:00.000Z');
  const cases = [
    { given: { a: 1 }, want: { json: { a: 1 } } },
    { given: at, want: { json: at.toISOString(), meta: [['date', []]] } },
    { given: { items: [{ createdAt: at }, { createdAt: null }] }, want: { json: { items: [{ createdAt: at.toISOString() }, { createdAt: null }] }, meta: [['date', ['items', 0, 'createdAt']]] } },
    { given: { skip: undefined, keep: 'x' }, want: { json: { keep: 'x' } } },
  ];
  for (const { given, want } of cases) {
    it(`encodes ${JSON.stringify(want.json)}`, () => {
      expect(encode(given)).toEqual(want);
      expect(decode(JSON.parse(JSON.stringify(encode(given))))).toEqual(given);
    });
  }

  it('round-trips dates as Date objects', () => {
    const decoded = decode(JSON.parse(JSON.stringify(encode({ when: at, list: [at] })))) as { when: Date; list: Date[] };
    expect(decoded.when).toBeInstanceOf(Date);
    expect(decoded.list[0]!.getTime()).toBe(at.getTime());
  });

  const malformed = [
    null,
    [],
    'text',
    { meta: [] },
    { json: {}, meta: 'x' },
    { json: {}, meta: [['bigint', ['a']]] },
    { json: { a: 'not a date' }, meta: [['date', ['a']]] },
    { json: {}, meta: [['date', ['missing']]] },
  ];
  for (const body of malformed) {
    it(`refuses ${JSON.stringify(body)}`, () => {
      expect(() => decode(body)).toThrow(WireError);
    });
  }
});
