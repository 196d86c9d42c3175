/**
 * Secrets handed to clients (session tokens, emailed links) are `<id>.<secret>`: the id finds the
 * row, and only SHA-256(secret) is stored, compared in constant time (Lucia's session design).
 * A database leak then yields no usable token.
 */
import { sha256 } from '@oslojs/crypto/sha2';
import { constantTimeEqual } from '@oslojs/crypto/subtle';
import { randomToken } from '../ids.ts';

export interface IssuedSecret {
  id: string;
  token: string;
  hash: Uint8Array;
}

export function issueSecret(): IssuedSecret {
  const id = randomToken(15);
  const secret = randomToken(32);
  return { id, token: `${id}.${secret}`, hash: hashSecret(secret) };
}

export function hashSecret(secret: string): Uint8Array {
  return sha256(new TextEncoder().encode(secret));
}

/** Splits a presented token; null when it cannot be one of ours. */
export function parseToken(token: string): { id: string; secret: string } | null {
  const match = /^([a-z2-7]{24})\.([a-z2-7]{52})$/.exec(token);
  return match ? { id: match[1]!, secret: match[2]! } : null;
}

export function secretMatches(secret: string, storedHash: Uint8Array): boolean {
  return constantTimeEqual(hashSecret(secret), storedHash);
}
