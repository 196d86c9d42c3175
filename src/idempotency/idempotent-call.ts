/**
 * Idempotent retries with Stripe's semantics (docs/idempotency.md), for the operations that
 * declare the `Idempotency-Key` header. The binding layer (http/procedure-call.ts) runs a call
 * through `runOnce` after the input is validated and access is enforced, so what is kept is the
 * answer of the work itself; no handler knows about it.
 *
 * - The first request with a key inserts the key's row (the primary key on (caller, key) lets one
 *   of any number of concurrent inserts win, on every instance), then runs, then writes its answer
 *   into the row.
 * - A later request with the key and the same operation and input gets the kept answer again
 *   (same status, same body, `Idempotent-Replayed: true`); with another operation or input, 409.
 * - A request that finds the row still unanswered gets 409 at once rather than waiting for the
 *   first: a wait would hold a connection and a request slot for as long as the first runs, and
 *   the client, which retries anyway, learns at once that its first attempt is still alive.
 * - Kept: 2xx and 4xx answers (but 429). Not kept: 429 and 5xx (and any unexpected error), which
 *   say "try again": the key is given back, so the retry does the work.
 * - Unless the work committed: each transaction of the work marks the key's row just before its
 *   COMMIT (db/commit-marker.ts, store.ts markWorkDone), so whether the work is in the database is
 *   known even when the COMMIT's answer was lost (its deadline passed, its connection dropped).
 *   A failed request whose work committed keeps its key, with a 409 "done, but its answer was
 *   lost" as its answer: a retry must not create (and charge) a second time.
 * - A key is good for 24 hours from its first use; after that it is free again, and the hourly
 *   sweeper deletes it. A row whose request never finished (its process died) is taken over by a
 *   retry once its lease of IN_PROGRESS_LEASE_MS has run out.
 */
import { randomUUID } from 'node:crypto';
import type { Sql } from '../db/connection.ts';
import type { Logger } from '../logger.ts';
import { ApiError, type ApiErrorBody, type ErrorCode } from '../contract/errors.ts';
import { decode, encode } from '../rpc/wire.ts';
import { requestHash } from './idempotency-key.ts';
import { withCommitMarker, type CommitMarker } from '../db/commit-marker.ts';
import { claimKey, findKey, markWorkDone, releaseKey, saveAnswer, takeOverKey, type KeyClaim, type KeyId } from './store.ts';

/** How long a key's first answer is kept and replayed. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 3600_000;
/**
 * How long a key stays "in progress" without an answer before a retry may take it over: far
 * longer than any procedure runs (they answer in seconds, bounded by the database's and the
 * storage's deadlines), so only a request whose process died is taken over.
 */
export const IN_PROGRESS_LEASE_MS = 5 * 60_000;
/** Claims tried when the row keeps changing under us (given back, or taken over, in between). */
const CLAIM_ATTEMPTS = 3;

export interface IdempotentCall {
  sql: Sql;
  now: () => Date;
  log: Pick<Logger, 'warn'>;
  /** callerOf(principal, ip) */
  caller: string;
  key: string;
  operation: string;
  /** The validated input in its JSON form. */
  input: unknown;
  /** The operation's 2xx status (the status of every success answer). */
  successStatus: number;
  /** The error codes the operation declares, for a kept error body's `defined`. */
  declared: readonly string[];
  /** Called before a replayed answer is returned or thrown: the transport marks the response. */
  replayed: () => void;
}

type Claim = { token: string } | { replay: { status: number; body: unknown } };

/** Runs `work` at most once per caller and key (see above); a retry gets its answer again. */
export async function runOnce<T>(call: IdempotentCall, work: () => Promise<T>): Promise<T> {
  const id: KeyId = { caller: call.caller, key: call.key };
  const claim = await claimOrFind(call, id, requestHash(call.input));
  if ('replay' in claim) {
    call.replayed();
    return replay<T>(claim.replay);
  }
  const marker = doneMarker(id, claim.token);
  let answer: T;
  try {
    answer = await withCommitMarker(marker, work);
  } catch (error) {
    if (error instanceof ApiError && isKept(error.status)) await keep(call, id, claim.token, { status: error.status, body: error.toBody(call.declared) });
    else if ((await giveBack(call, id, claim.token)) === 'done') {
      // The work committed, though this request failed after it (its COMMIT's answer never came).
      call.log.warn({ err: error, key: id.key }, 'the work of an idempotency key committed but its request failed; its key keeps a 409 "answer lost"');
      const lost = answerLost();
      await keep(call, id, claim.token, { status: lost.status, body: lost.toBody(call.declared) });
      throw lost;
    }
    // ('unknown': the database cannot say; the key stays in progress, and its lease frees it only if the work did not commit.)
    throw error;
  }
  // Kept in the RPC wire form, which marks the Dates: a replay on either transport writes the
  // answer exactly as the first one was written.
  await keep(call, id, claim.token, { status: call.successStatus, body: encode(answer) });
  return answer;
}

/** 2xx and 4xx are the work's answer; 429 and 5xx ask for a retry, which must then do the work. */
function isKept(status: number): boolean {
  return status < 500 && status !== 429;
}

async function claimOrFind(call: IdempotentCall, id: KeyId, hash: string): Promise<Claim> {
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    const now = call.now();
    const claim: KeyClaim = { ...id, operation: call.operation, requestHash: hash, lockToken: randomUUID(), now };
    if (await claimKey(call.sql, claim)) return { token: claim.lockToken };
    const row = await findKey(call.sql, id);
    if (!row) continue; // given back since our insert: claim again
    if (row.createdAt.getTime() <= now.getTime() - IDEMPOTENCY_WINDOW_MS) {
      // Expired (the sweeper has not come by yet): the key is free again.
      if (await takeOverKey(call.sql, claim, row.lockToken, true)) return { token: claim.lockToken };
      continue;
    }
    if (row.operation !== call.operation) {
      throw conflict(`This Idempotency-Key was already used for ${row.operation}; send a new key for another request.`);
    }
    if (row.requestHash !== hash) {
      throw conflict('This Idempotency-Key was already used with a different input; send a new key for a different request.');
    }
    if (row.response) return { replay: row.response };
    if (row.lockedAt.getTime() <= now.getTime() - IN_PROGRESS_LEASE_MS) {
      // Its request never answered (its process stopped). If its work committed, it is done;
      // else this retry does the work (the take-over itself checks, against a late COMMIT).
      if (row.workDone) throw answerLost();
      if (await takeOverKey(call.sql, claim, row.lockToken, false)) return { token: claim.lockToken };
      continue;
    }
    break;
  }
  throw conflict('A request with this Idempotency-Key is still in progress; retry once it has finished to get its answer.');
}

function conflict(message: string): ApiError {
  return new ApiError('CONFLICT', { message });
}

/** The answer of a key whose work committed but whose answer was lost: final, like any 409 of the work. */
function answerLost(): ApiError {
  return conflict('The request with this Idempotency-Key was done, but its answer was lost; look up what it made instead of sending it again (a new key makes a new one).');
}

/** Marks the key's row in each transaction of the work, so its commit is known (store.ts markWorkDone). */
function doneMarker(id: KeyId, token: string): CommitMarker {
  return {
    async write(tx) {
      // Taken over by a retry while this work ran (its lease lapsed): that retry does the work, not this one.
      if (!(await markWorkDone(tx as unknown as Sql, id, token))) throw conflict('A request with this Idempotency-Key is still in progress; retry once it has finished to get its answer.');
    },
  };
}

/** The kept answer, as the first request answered it: a success returned, an error thrown. */
function replay<T>(kept: { status: number; body: unknown }): T {
  if (kept.status < 300) return decode(kept.body) as T;
  const body = kept.body as ApiErrorBody;
  // `defined` is recomputed from the operation's declared codes when sent: the same as kept.
  throw new ApiError(body.code as ErrorCode, { message: body.message, ...(body.data === undefined ? {} : { data: body.data }) } as never);
}

/**
 * Writes the answer. A failure here (the database went away after the work) is logged, not
 * answered: the work is done and this answer is its result; the key stays in progress until its
 * lease runs out.
 */
async function keep(call: IdempotentCall, id: KeyId, token: string, answer: { status: number; body: unknown }): Promise<void> {
  // Tried three times: a key left without its answer is taken over once its lease ends, and that
  // retry would do the work a second time.
  for (let attempt = 1; ; attempt += 1) {
    try {
      if (!(await saveAnswer(call.sql, id, token, answer, call.now()))) call.log.warn({ key: id.key }, 'idempotency key taken over before its answer was kept');
      return;
    } catch (error) {
      if (attempt >= 3) {
        call.log.warn({ err: error, key: id.key }, 'keeping the answer of an idempotency key failed; a retry after its lease does the work again');
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
    }
  }
}

/**
 * Frees the key for a retry unless its work committed ('done'). When the database cannot be
 * reached ('unknown'), the key stays in progress: its lease frees it later, and only if the work
 * did not commit (takeOverKey).
 */
async function giveBack(call: IdempotentCall, id: KeyId, token: string): Promise<'released' | 'done' | 'unknown'> {
  try {
    return await releaseKey(call.sql, id, token);
  } catch (error) {
    call.log.warn({ err: error, key: id.key }, 'giving back an idempotency key failed');
    return 'unknown';
  }
}
