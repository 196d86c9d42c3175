/**
 * The published contracts (generated/openapi.json and generated/auth-openapi.json) as tests read
 * them, and `deref`: the resolution of their local `$ref`s (`#/components/...`, JSON-pointer
 * escapes undone) that codegen itself uses (codegen/deref.ts), so every test reads a reference
 * exactly as the generator did. It throws on a reference that does not resolve.
 */
import { readFileSync } from 'node:fs';
import type { Json } from '../../codegen/deref.ts';

export { deref, type Json } from '../../codegen/deref.ts';

/** A fresh parse of generated/<name>: a copy of its own, which the caller may change. */
export function readPublishedDocument(name: 'openapi.json' | 'auth-openapi.json'): Json {
  return JSON.parse(readFileSync(new URL(`../../generated/${name}`, import.meta.url), 'utf8'));
}
