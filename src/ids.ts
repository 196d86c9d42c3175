/** Opaque random ids with a kind prefix (`org_`, `ws_`, `doc_`, ...): 120 random bits, base32. */
import { encodeBase32LowerCaseNoPadding } from '@oslojs/encoding';

export function randomToken(bytes = 15): string {
  return encodeBase32LowerCaseNoPadding(crypto.getRandomValues(new Uint8Array(bytes)));
}

export function newId(prefix: string): string {
  return `${prefix}_${randomToken()}`;
}
