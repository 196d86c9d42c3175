/**
 * What identifies an idempotent request (docs/idempotency.md): the `Idempotency-Key` header, the
 * caller who sent it, and a hash of the input a retry must repeat.
 */
import { createHash } from 'node:crypto';
import type { ValidationIssue } from '../contract/errors.ts';
import type { Principal } from '../auth/principal.ts';

/**
 * The key's shape, as the contract declares it (components/parameters/IdempotencyKeyHeader.yaml;
 * a test keeps the two equal): 1 to 255 printable ASCII characters, spaces only inside (HTTP trims
 * them at the ends, so a key that began or ended with one would not come back as sent).
 */
export const KEY_PATTERN = /^[!-~]([ -~]*[!-~])?$/;
export const KEY_MAX_LENGTH = 255;

/** The header's issue for a 400, or undefined when the key is well formed (or absent). */
export function keyIssue(header: string | undefined): ValidationIssue | undefined {
  if (header === undefined || (header.length <= KEY_MAX_LENGTH && KEY_PATTERN.test(header))) return undefined;
  return {
    path: ['Idempotency-Key'],
    message: `must be 1 to ${KEY_MAX_LENGTH} printable ASCII characters`,
    params: { pattern: KEY_PATTERN.source, maxLength: KEY_MAX_LENGTH },
  };
}

/**
 * Whose key it is: the signed-in user (whichever session or transport they use), or without a
 * session (the public contact.send) the client's address. Two callers never share a key.
 */
export function callerOf(principal: Principal | null, ip: string): string {
  return principal ? `user:${principal.userId}` : `ip:${ip}`;
}

/**
 * SHA-256 (hex) of the input in canonical JSON: keys sorted at every level, so REST (path, query
 * and body merged) and RPC (one JSON object) give the same hash for the same input. Taken after
 * validation, so a default the contract filled in counts as sent.
 */
export function requestHash(input: unknown): string {
  return createHash('sha256').update(canonicalJson(input)).digest('hex');
}

export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`;
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, child]) => child !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, child]) => `${JSON.stringify(key)}:${canonicalJson(child)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
