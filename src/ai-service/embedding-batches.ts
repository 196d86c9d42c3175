/**
 * Which waiting texts the local embedder (embedder.ts) sends to its model together (issue 38).
 * A small document sends a request of a few texts; one request per batch left the model running
 * batches of one or two texts, at a third of its speed. So a documents' batch gathers the texts of
 * several requests, of several organizations, up to EMBEDDING_BATCH_SIZE, and shares its slots:
 *
 * - in rounds, each organization with waiting texts gets `max(1, floor(slots left / organizations
 *   waiting))` of them, visited in the fair line's turns (the one served least recently first), so
 *   none takes more than its share while others wait, and what one cannot use goes to the others
 *   in the next round;
 * - within its share an organization's requests go in arrival order, each request's texts longest
 *   first (its `order`); the model's thread sorts the whole batch by length again;
 * - a request whose share ran out goes back behind its organization's other requests.
 */
import type { FairLine } from './fair-queue.ts';
import { MAX_TOKENS } from './model-files.ts';

/** What a batch needs of a waiting request (embedder.ts's Request). */
export interface Pending {
  organization: string;
  texts: string[];
  /** Text indexes, longest first. */
  order: number[];
  /** How much of `order` has been sent. */
  sent: number;
}

/** One request's texts in a batch. */
export interface BatchPart<T extends Pending> {
  request: T;
  /** Indexes into the request's texts, longest first; the batch holds the parts' texts in part order. */
  indexes: number[];
  /**
   * The batch sends the request's last texts: it has left the line, and the line must hear
   * `finished` for it once the batch is done. A request with texts left is back in the line already.
   */
  last: boolean;
}

/**
 * Takes the next batch of at most `slots` texts from the line. With `mix` false it holds one
 * request's texts only (the queries' lane: a query is never held up by other requests' texts).
 */
export function nextBatch<T extends Pending>(line: FairLine<T>, slots: number, mix = true): BatchPart<T>[] {
  const parts = new Map<T, BatchPart<T>>();
  if (!mix) {
    const first = line.turns()[0];
    if (first !== undefined) give(line, first, slots, parts, 1);
    return [...parts.values()];
  }
  let left = slots;
  while (left > 0 && line.size() > 0) {
    const groups = line.turns();
    const share = Math.max(1, Math.floor(left / groups.length));
    for (const group of groups) {
      if (left === 0) break;
      left -= give(line, group, Math.min(share, left), parts);
    }
  }
  return [...parts.values()];
}

/** Gives `group` up to `budget` texts of its waiting requests (at most `requests` of them); returns how many. */
function give<T extends Pending>(line: FairLine<T>, group: string, budget: number, parts: Map<T, BatchPart<T>>, requests = Infinity): number {
  let given = 0;
  for (let taken = 0; given < budget && taken < requests; taken += 1) {
    const request = line.take(group);
    if (!request) break;
    const indexes = request.order.slice(request.sent, request.sent + budget - given);
    request.sent += indexes.length;
    given += indexes.length;
    let part = parts.get(request);
    if (!part) parts.set(request, (part = { request, indexes: [], last: false }));
    part.indexes.push(...indexes);
    if (request.sent < request.order.length) {
      // Back in the line before its take is finished: the other way round the organization looks
      // idle for a moment, the line forgets when it was served, and it comes back ahead of every
      // organization already served (issue 40).
      line.push(group, request);
      line.finished(group);
    } else part.last = true;
  }
  return given;
}

/**
 * The batch's token count shared among its requests for their `usage`, in proportion to an
 * estimate of each part's tokens, summing to `total` exactly. The model's thread reports one total
 * per batch, so only a batch of one request gets its own exact count.
 */
export function shareTokens(total: number, parts: readonly BatchPart<Pending>[]): number[] {
  if (parts.length <= 1) return parts.map(() => total);
  const weights = parts.map((part) => part.indexes.reduce((sum, index) => sum + estimatedTokens(part.request.texts[index]!), 0));
  const weight = weights.reduce((sum, value) => sum + value, 0);
  const exact = weights.map((value) => (total * value) / weight);
  const shares = exact.map(Math.floor);
  // Largest remainders first, so the shares add up to the total.
  const byRemainder = exact.map((value, at) => ({ at, remainder: value - shares[at]! })).sort((a, b) => b.remainder - a.remainder);
  for (let rest = total - shares.reduce((sum, value) => sum + value, 0), next = 0; rest > 0; rest -= 1, next += 1) shares[byRemainder[next]!.at]! += 1;
  return shares;
}

/** About four characters a WordPiece token in English prose, plus [CLS] and [SEP], cut as the model cuts. */
function estimatedTokens(text: string): number {
  return Math.min(MAX_TOKENS, 2 + Math.ceil(text.length / 4));
}
