/**
 * Fixed-window request limiters: the shared per-IP limiter on /rpc/* and /api/v1/*, the identity
 * limiters, the sign-in limiters, contact.send's and documents.search's. This module holds the
 * interface and the in-memory limiter, which the embedded database (one process) uses; on a
 * database server the limiters count in PostgreSQL as well, so several API instances together
 * allow what one allows, and this in-memory count decides a hit the database cannot count in time
 * (shared-rate-limit.ts).
 *
 * Clients are counted by `addressKey`: an IPv4 address as is, an IPv6 address by its /64 (one
 * host usually holds a whole /64, so counting single IPv6 addresses would give it 2^64 budgets).
 */
import { isIP } from 'node:net';
import { ApiError } from '../contract/errors.ts';

export type RateLimitDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

export interface RateLimiter {
  /** Counts one hit for key; answers whether it is allowed and, if not, seconds until the window resets. */
  hit(key: string): Promise<RateLimitDecision>;
}

export interface RateLimit {
  /** Hits allowed per window and key. */
  limit: number;
  windowMs: number;
}

/**
 * Makes the app's limiter called `name` (one name per limiter: on a database server the name
 * keeps its counts apart from the other limiters').
 */
export type LimiterFactory = (name: string, limit: RateLimit) => RateLimiter;

/** A window starts at a key's first hit and lasts `windowMs`; `now` is the service clock in milliseconds. */
export function createRateLimiter(options: RateLimit & { now?: () => number }): RateLimiter {
  const now = options.now ?? Date.now;
  const windows = new Map<string, { start: number; count: number }>();
  let lastSweep = now();
  return {
    async hit(key) {
      const time = now();
      // Drop finished windows now and then so memory stays bounded by the active clients.
      if (time - lastSweep > options.windowMs) {
        for (const [k, w] of windows) if (time - w.start >= options.windowMs) windows.delete(k);
        lastSweep = time;
      }
      let window = windows.get(key);
      if (!window || time - window.start >= options.windowMs) {
        window = { start: time, count: 0 };
        windows.set(key, window);
      }
      window.count += 1;
      if (window.count <= options.limit) return { allowed: true };
      return { allowed: false, retryAfterSeconds: retryAfter(window.start + options.windowMs, time) };
    },
  };
}

/** In-memory limiters, for one process (the embedded database). */
export function memoryLimiters(now?: () => number): LimiterFactory {
  return (_name, limit) => createRateLimiter({ ...limit, ...(now ? { now } : {}) });
}

/** Whole seconds until `resetsAt` (milliseconds), at least 1: the Retry-After of a refusal. */
export function retryAfter(resetsAt: number, now: number): number {
  return Math.max(1, Math.ceil((resetsAt - now) / 1000));
}

/** A limiter whose keys are client addresses, counted by `addressKey`. */
export function byAddress(limiter: RateLimiter): RateLimiter {
  return { hit: (address) => limiter.hit(addressKey(address)) };
}

/** The key of one account's sign-in attempts from one client (an IPv6 client by its /64). */
export function signInKey(email: string, address: string): string {
  return JSON.stringify([email.toLowerCase(), addressKey(address)]);
}

/**
 * The limiter key of an address: IPv4 as is, IPv6 as its /64 prefix (`2001:db8:0:1::/64`).
 * Anything that is not an address (`unknown`, or a key already made) is returned unchanged, so
 * applying it twice is harmless.
 */
export function addressKey(address: string): string {
  const normal = normalizeAddress(address);
  if (isIP(normal) !== 6) return normal;
  const groups = expandIPv6(normal);
  return `${groups
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address. */
function expandIPv6(address: string): number[] {
  // An IPv4 tail (::ffff:1.2.3.4, 64:ff9b::1.2.3.4) is two groups written in decimal.
  const text = address.replace(/(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/, (_all, a, b, c, d) => `${((Number(a) << 8) | Number(b)).toString(16)}:${((Number(c) << 8) | Number(d)).toString(16)}`);
  const [head = '', rest] = text.split('::');
  const groups = (part: string) =>
    part
      .split(':')
      .filter(Boolean)
      .map((group) => parseInt(group, 16));
  const left = groups(head);
  if (rest === undefined) return left;
  const right = groups(rest);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/** IPv4-mapped IPv6 (::ffff:1.2.3.4) is the same client as 1.2.3.4; a zone index is dropped; IPv6 in lower case. */
export function normalizeAddress(address: string): string {
  const bare = address.replace(/%.*$/, '');
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(bare);
  if (mapped && isIP(mapped[1]!) === 4) return mapped[1]!;
  return isIP(bare) === 6 ? bare.toLowerCase() : isIP(bare) === 4 ? bare : address;
}

/** Counts one hit of `key`: undefined while allowed, else the 429 to answer (with Retry-After). */
export async function refusal(limiter: RateLimiter, key: string, message: string): Promise<ApiError<'TOO_MANY_REQUESTS'> | undefined> {
  const result = await limiter.hit(key);
  if (result.allowed) return undefined;
  return new ApiError('TOO_MANY_REQUESTS', { message, headers: { 'Retry-After': String(result.retryAfterSeconds) } });
}
