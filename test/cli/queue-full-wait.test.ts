/**
 * The CLI's wait for a full job queue (clients/typescript/src/cli/job-watch.ts createJob): it
 * waits what each 429's Retry-After says, and gives up after the same time in all whatever the
 * hint, so the service's short hints while its queue moves fast (1 s) do not make it give up sooner.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiClientError } from '../../clients/typescript/src/index.ts';
import { createJob } from '../../clients/typescript/src/cli/job-watch.ts';
import type { Session } from '../../clients/typescript/src/cli/session.ts';

/** A session whose jobs.create is refused `refusals` times with this Retry-After, then creates. */
function refusingSession(refusals: number, retryAfterSeconds: number) {
  const notes: string[] = [];
  let calls = 0;
  const create = async () => {
    calls += 1;
    if (calls <= refusals) throw new ApiClientError({ code: 'TOO_MANY_REQUESTS', status: 429, message: 'Full.', defined: true, retryAfterSeconds });
    return { id: 'job_1' };
  };
  const session = { client: () => ({ jobs: { create } }), output: { note: (line: string) => notes.push(line) } } as unknown as Session;
  return { session, notes, calls: () => calls };
}

describe('createJob and a full queue', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('waits each Retry-After of 1 s and tries again for 50 s in all, not five tries', async () => {
    vi.useFakeTimers();
    const { session, notes, calls } = refusingSession(40, 1);
    const created = createJob(session, { organizationId: 'org_1', kind: 'text.embed', input: { texts: ['x'] } } as never);
    await vi.advanceTimersByTimeAsync(41_000);
    await expect(created).resolves.toEqual({ id: 'job_1' });
    expect(calls()).toBe(41);
    expect(notes[0]).toBe('Full. Trying again in 1 s (1 of 50).');
  });

  it('answers the 429 once 50 s of waits are spent', async () => {
    vi.useFakeTimers();
    const { session, calls } = refusingSession(1000, 1);
    const created = createJob(session, { organizationId: 'org_1', kind: 'text.embed', input: { texts: ['x'] } } as never);
    const outcome = created.catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(await outcome).toMatchObject({ status: 429 });
    expect(calls()).toBe(51);
  });

  it('with the longest hint, five waits of 10 s, as before', async () => {
    vi.useFakeTimers();
    const { session, notes, calls } = refusingSession(1000, 10);
    const outcome = createJob(session, { organizationId: 'org_1', kind: 'text.embed', input: { texts: ['x'] } } as never).catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(await outcome).toMatchObject({ status: 429 });
    expect(calls()).toBe(6);
    expect(notes).toEqual([1, 2, 3, 4, 5].map((n) => `Full. Trying again in 10 s (${n} of 5).`));
  });
});
