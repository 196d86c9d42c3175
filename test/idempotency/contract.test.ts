/**
 * The contract is the one list of idempotent operations: codegen marks a route row `idempotent`
 * exactly when its operation declares the shared Idempotency-Key header, those operations declare
 * the 409 and the Idempotent-Replayed header, and the binding layer checks the key against the
 * very pattern the contract publishes. Plus the canonical input hash.
 */
import { describe, expect, it } from 'vitest';
import { procedures } from '../../generated/procedures.ts';
import { KEY_MAX_LENGTH, KEY_PATTERN, canonicalJson, keyIssue, requestHash } from '../../src/idempotency/idempotency-key.ts';
import { deref, readPublishedDocument, type Json } from '../support/openapi-document.ts';

const doc = readPublishedDocument('openapi.json');
const operations: Json[] = Object.values<Json>(doc.paths).flatMap((item) => ['get', 'put', 'post', 'patch', 'delete'].map((method) => item[method]).filter(Boolean));
const declaresKey = (op: Json) => (op.parameters ?? []).some((p: Json) => deref(doc, p).in === 'header' && deref(doc, p).name === 'Idempotency-Key');

describe('the idempotent operations', () => {
  it('are the six the contract gives the Idempotency-Key header, and their route rows say so', () => {
    const declared = operations
      .filter(declaresKey)
      .map((op) => op.operationId)
      .sort();
    expect(declared).toEqual(['contact.send', 'documents.complete', 'documents.createUpload', 'jobs.create', 'jobs.retry', 'workspaces.create']);
    const flagged = Object.values(procedures)
      .filter((row) => 'idempotent' in row && row.idempotent === true)
      .map((row) => row.name)
      .sort();
    expect(flagged).toEqual(declared);
  });

  it('share one optional header parameter, and declare 409 CONFLICT and Idempotent-Replayed on their 2xx', () => {
    for (const op of operations.filter(declaresKey)) {
      const refs = (op.parameters as Json[]).filter((p) => deref(doc, p).name === 'Idempotency-Key');
      expect(refs, op.operationId).toEqual([{ $ref: '#/components/parameters/IdempotencyKeyHeader' }]);
      const conflict = deref(doc, op.responses['409']);
      expect(conflict.description, op.operationId).toMatch(/Idempotency-Key/);
      expect(deref(doc, conflict.content['application/json'].schema).properties.code.const).toBe('CONFLICT');
      const success = Object.keys(op.responses).find((status) => status.startsWith('2'))!;
      expect(deref(doc, op.responses[success]).headers, op.operationId).toHaveProperty('Idempotent-Replayed');
    }
  });

  it('no other operation mentions the replay header', () => {
    for (const op of operations.filter((o) => !declaresKey(o))) {
      for (const response of Object.values<Json>(op.responses)) expect(deref(doc, response).headers ?? {}, op.operationId).not.toHaveProperty('Idempotent-Replayed');
    }
  });
});

describe('the key', () => {
  const schema = deref(doc, doc.components.parameters.IdempotencyKeyHeader.schema);

  it('is checked against the pattern and length the contract publishes', () => {
    expect(KEY_PATTERN.source).toBe(schema.pattern);
    expect(KEY_MAX_LENGTH).toBe(schema.maxLength);
    expect(schema.minLength).toBe(1);
  });

  it.each(['a', 'k'.repeat(255), '5d1c8a0e-3f7b-4c2a-9e61-0b4f2d7a9c13', 'order 42 / create', '!~'])('takes %j', (key) => {
    expect(keyIssue(key)).toBeUndefined();
  });
  it.each(['', 'k'.repeat(256), ' leading', 'trailing ', 'tab\tinside', 'caf\u00e9', 'line\nbreak'])('refuses %j', (key) => {
    expect(keyIssue(key)).toMatchObject({ path: ['Idempotency-Key'] });
  });
  it('is optional', () => {
    expect(keyIssue(undefined)).toBeUndefined();
  });
});

describe('the request hash', () => {
  it('is the same for the same input in any key order, and differs for any other value', () => {
    const a = { organizationId: 'org_1', input: { texts: ['x', 'y'], model: 'm' }, kind: 'text.embed' };
    const b = { kind: 'text.embed', input: { model: 'm', texts: ['x', 'y'] }, organizationId: 'org_1' };
    expect(canonicalJson(a)).toBe(canonicalJson(b));
    expect(requestHash(a)).toBe(requestHash(b));
    expect(requestHash(a)).toMatch(/^[0-9a-f]{64}$/);
    expect(requestHash({ ...a, input: { texts: ['y', 'x'], model: 'm' } })).not.toBe(requestHash(a));
    expect(requestHash({ ...a, extra: null })).not.toBe(requestHash(a));
    expect(requestHash({ n: 1 })).not.toBe(requestHash({ n: '1' }));
    // An absent field and an undefined one are the same input.
    expect(requestHash({ ...a, teamId: undefined })).toBe(requestHash(a));
  });
});
