/**
 * The companion's only credential: AI_API_KEY, sent by its client as `Authorization: Bearer <key>`.
 * Compared in constant time over SHA-256 digests, so neither the key's content nor its length
 * leaks through timing.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export function bearerMatches(header: string | undefined, key: string): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  if (!match) return false;
  return timingSafeEqual(digest(match[1]!), digest(key));
}

/** A fresh key for a companion that `serve` starts itself when AI_API_KEY is not set. */
export function generateApiKey(): string {
  return randomBytes(32).toString('base64url');
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
