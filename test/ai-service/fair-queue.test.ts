import { describe, expect, it } from 'vitest';
import { createFairLine, createFairQueue, type QueueBounds } from '../../src/ai-service/fair-queue.ts';
import { HttpError } from '../../src/ai-service/http-exchange.ts';

/** A task the test finishes by hand, so the order of events is the test's, not the clock's. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

const bounds = (overrides: Partial<QueueBounds> = {}): QueueBounds => ({ capacity: 1, maxWaiting: 100, maxWaitingPerGroup: 100, retryAfterSeconds: 7, ...overrides });

/** Lets every settled promise's callbacks run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('createFairLine', () => {
  it.each([
    {
      given: [
        ['A', 'a1'],
        ['A', 'a2'],
        ['A', 'a3'],
        ['B', 'b1'],
        ['C', 'c1'],
        ['B', 'b2'],
      ],
      want: ['a1', 'b1', 'c1', 'a2', 'b2', 'a3'],
    },
    {
      given: [
        ['A', 'a1'],
        ['A', 'a2'],
      ],
      want: ['a1', 'a2'],
    },
    {
      given: [
        ['', 'q1'],
        ['A', 'a1'],
        ['', 'q2'],
      ],
      want: ['q1', 'a1', 'q2'],
    },
  ])('serves groups round-robin, FIFO within one: $want', ({ given, want }) => {
    const line = createFairLine<{ group: string; name: string }>((item) => item.group);
    for (const [group, name] of given) line.push(group!, { group: group!, name: name! });
    const taken: string[] = [];
    for (let item = line.take(); item; item = line.take()) taken.push(item.name);
    expect(taken).toEqual(want);
    expect(line.size()).toBe(0);
  });

  it('serves the group served least recently first, so a newcomer goes before a backlog', () => {
    const line = createFairLine<string>((item) => item[0]!);
    for (const item of ['A1', 'A2', 'A3']) line.push('A', item);
    expect(line.take()).toBe('A1');
    line.push('B', 'B1');
    line.push('C', 'C1');
    expect([line.take(), line.take(), line.take(), line.take()]).toEqual(['B1', 'C1', 'A2', 'A3']);
  });

  it('drops a group with nothing waiting or in progress, keeping its turn while one served before it is in the line (issue 40)', () => {
    const line = createFairLine<string>((item) => item[0]!);
    line.push('A', 'A1');
    line.push('A', 'A2');
    line.take();
    line.push('B', 'B1');
    // B was never served, so it goes before A's second.
    expect(line.take()).toBe('B1');
    line.finished('B');
    // B is idle, but it was served after A, which still waits: coming back, it goes behind A.
    line.push('B', 'B2');
    expect(line.take()).toBe('A2');
    expect(line.take()).toBe('B2');
    // Once nothing served before them is in the line, idle groups count as new again: by arrival.
    for (const group of ['A', 'A', 'B']) line.finished(group);
    line.push('B', 'B3');
    line.push('A', 'A3');
    expect([line.take(), line.take()]).toEqual(['B3', 'A3']);
  });

  it('removes a waiting item and counts sizes per group', () => {
    const line = createFairLine<string>((item) => item[0]!);
    for (const item of ['A1', 'A2', 'B1']) line.push(item[0]!, item);
    expect([line.size(), line.size('A'), line.size('B'), line.size('C')]).toEqual([3, 2, 1, 0]);
    expect(line.remove('A1')).toBe(true);
    expect(line.remove('A1')).toBe(false);
    expect([line.take(), line.take(), line.take()]).toEqual(['A2', 'B1', undefined]);
  });
});

describe('createFairQueue', () => {
  it('runs `capacity` tasks at once and the rest in fair turns', async () => {
    const queue = createFairQueue(bounds({ capacity: 2 }), 'documents');
    const gates = new Map<string, ReturnType<typeof gate>>();
    const started: string[] = [];
    const run = (group: string, name: string) => {
      const own = gate();
      gates.set(name, own);
      return queue.run(group, async () => {
        started.push(name);
        await own.opened;
        return name;
      });
    };
    const results = [run('A', 'a1'), run('A', 'a2'), run('A', 'a3'), run('A', 'a4'), run('B', 'b1'), run('C', 'c1')];
    await settle();
    expect(started).toEqual(['a1', 'a2']);
    expect(queue.stats()).toMatchObject({ running: 2, waiting: 4 });
    gates.get('a1')!.open();
    await settle();
    gates.get('a2')!.open();
    await settle();
    expect(started).toEqual(['a1', 'a2', 'b1', 'c1']);
    for (const own of gates.values()) own.open();
    await settle();
    for (const own of gates.values()) own.open();
    expect(await Promise.all(results)).toEqual(['a1', 'a2', 'a3', 'a4', 'b1', 'c1']);
    expect(started).toEqual(['a1', 'a2', 'b1', 'c1', 'a3', 'a4']);
    expect(queue.stats()).toEqual({ running: 0, waiting: 0, dropped: 0, refused: 0 });
  });

  it('refuses past the bound, in total and per group, with 503 and Retry-After, and serves the rest', async () => {
    const queue = createFairQueue(bounds({ maxWaiting: 3, maxWaitingPerGroup: 2 }), 'documents');
    const own = gate();
    const task = async () => {
      await own.opened;
      return 'done';
    };
    const accepted = [queue.run('A', task), queue.run('A', task), queue.run('A', task)];
    const refusedA = await queue.run('A', task).catch((error: unknown) => error);
    expect(refusedA).toBeInstanceOf(HttpError);
    expect(refusedA).toMatchObject({ status: 503, headers: { 'retry-after': '7' } });
    accepted.push(queue.run('B', task));
    const refusedB = await queue.run('B', task).catch((error: unknown) => error);
    expect(refusedB).toMatchObject({ status: 503, headers: { 'retry-after': '7' } });
    expect(queue.stats()).toEqual({ running: 1, waiting: 3, dropped: 0, refused: 2 });
    own.open();
    expect(await Promise.all(accepted)).toEqual(['done', 'done', 'done', 'done']);
  });

  it('drops waiting work whose caller went away and tells running work through its signal', async () => {
    const queue = createFairQueue(bounds(), 'documents');
    const running = new AbortController();
    const waiting = new AbortController();
    const ran: string[] = [];
    const first = queue.run(
      'A',
      (signal) =>
        new Promise((_, reject) => {
          ran.push('first');
          signal!.addEventListener('abort', () => reject(signal!.reason));
        }),
      running.signal,
    );
    const second = queue.run(
      'A',
      async () => {
        ran.push('second');
      },
      waiting.signal,
    );
    const third = queue.run('B', async () => {
      ran.push('third');
      return 'third';
    });
    await settle();
    waiting.abort(new Error('second went away'));
    await expect(second).rejects.toThrow('second went away');
    expect(queue.stats()).toMatchObject({ running: 1, waiting: 1, dropped: 1 });
    running.abort(new Error('first went away'));
    await expect(first).rejects.toThrow('first went away');
    expect(await third).toBe('third');
    expect(ran).toEqual(['first', 'third']);
    expect(queue.stats()).toEqual({ running: 0, waiting: 0, dropped: 2, refused: 0 });
  });

  it('does not run work whose signal has already aborted, and rejects the waiting on cancelWaiting', async () => {
    const queue = createFairQueue(bounds(), 'images');
    await expect(queue.run('A', async () => 'ran', AbortSignal.abort(new Error('gone')))).rejects.toThrow('gone');
    const own = gate();
    const first = queue.run('A', async () => {
      await own.opened;
      return 'first';
    });
    const second = queue.run('B', async () => 'second');
    queue.cancelWaiting(new Error('closing'));
    await expect(second).rejects.toThrow('closing');
    own.open();
    expect(await first).toBe('first');
  });
});
