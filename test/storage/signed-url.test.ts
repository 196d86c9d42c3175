/** Signed query strings of the local /uploads routes: what verifies, and every way tampering fails. */
import { describe, expect, it } from 'vitest';
import { sign, signedQuery, verifySignedQuery, type SignedTarget } from '../../src/storage/signed-url.ts';

const SECRET = 'test-secret-test-secret-test-secret!';
const now = new Date('2026-11-20T10:00:00Z');
const expires = now.getTime() / 1000 + 900;
const PATH = '/uploads/org_aaa/doc_bbb';
const upload: SignedTarget = { method: 'PUT', path: PATH, expires, size: 1234, contentType: 'text/plain' };
const download: SignedTarget = { method: 'GET', path: PATH, expires };

/** A PUT sends the Content-Type its address was made for unless told otherwise. */
function verify(method: string, path: string, query: string, at: Date = now, contentType = method === 'PUT' ? 'text/plain' : undefined) {
  return verifySignedQuery(SECRET, { method, path, query: new URLSearchParams(query), now: at, contentType });
}

/** A signed query with one parameter replaced (or removed with null). */
function edit(query: string, name: string, value: string | null): string {
  const params = new URLSearchParams(query);
  if (value === null) params.delete(name);
  else params.set(name, value);
  return params.toString();
}

const uploadQuery = signedQuery(SECRET, upload);
const downloadQuery = signedQuery(SECRET, download);

describe('signed upload and download addresses', () => {
  it('carries expires, size (uploads only) and a hex signature', () => {
    const params = new URLSearchParams(uploadQuery);
    expect([...params.keys()]).toEqual(['expires', 'size', 'signature']);
    expect(params.get('expires')).toBe(String(expires));
    expect(params.get('size')).toBe('1234');
    expect(params.get('signature')).toMatch(/^[0-9a-f]{64}$/);
    expect([...new URLSearchParams(downloadQuery).keys()]).toEqual(['expires', 'signature']);
  });

  it('verifies its own addresses, HEAD with the GET signature', () => {
    expect(verify('PUT', PATH, uploadQuery)).toEqual({ ok: true, expires, size: 1234 });
    expect(verify('GET', PATH, downloadQuery)).toEqual({ ok: true, expires, size: undefined });
    expect(verify('HEAD', PATH, downloadQuery)).toEqual({ ok: true, expires, size: undefined });
    // Unknown parameters (a cache buster) are ignored.
    expect(verify('GET', PATH, `${downloadQuery}&v=2`).ok).toBe(true);
  });

  it('differs with the secret', () => {
    expect(sign(SECRET, upload)).not.toBe(sign(`${SECRET}x`, upload));
    expect(verifySignedQuery(`${SECRET}x`, { method: 'PUT', path: PATH, query: new URLSearchParams(uploadQuery), now })).toEqual({ ok: false, reason: 'mismatch' });
  });

  const refused: { name: string; method: string; path?: string; query: string; at?: Date; reason: string }[] = [
    { name: 'another document', method: 'PUT', path: '/uploads/org_aaa/doc_ccc', query: uploadQuery, reason: 'mismatch' },
    { name: 'another organization', method: 'PUT', path: '/uploads/org_zzz/doc_bbb', query: uploadQuery, reason: 'mismatch' },
    { name: 'a path prefix', method: 'GET', path: '/x/uploads/org_aaa/doc_bbb', query: downloadQuery, reason: 'mismatch' },
    { name: 'expiry moved later', method: 'PUT', query: edit(uploadQuery, 'expires', String(expires + 3600)), reason: 'mismatch' },
    { name: 'expiry moved earlier', method: 'GET', query: edit(downloadQuery, 'expires', String(expires - 1)), reason: 'mismatch' },
    { name: 'size raised', method: 'PUT', query: edit(uploadQuery, 'size', '999999'), reason: 'mismatch' },
    { name: 'size lowered', method: 'PUT', query: edit(uploadQuery, 'size', '1'), reason: 'mismatch' },
    { name: 'size removed from an upload', method: 'PUT', query: edit(uploadQuery, 'size', null), reason: 'malformed' },
    { name: 'size added to a download', method: 'GET', query: edit(downloadQuery, 'size', '10'), reason: 'malformed' },
    { name: 'download address used to upload', method: 'PUT', query: `${downloadQuery}&size=1234`, reason: 'mismatch' },
    { name: 'upload address used to download', method: 'GET', query: edit(uploadQuery, 'size', null), reason: 'mismatch' },
    { name: 'upload address as is on GET', method: 'GET', query: uploadQuery, reason: 'malformed' },
    { name: 'DELETE', method: 'DELETE', query: downloadQuery, reason: 'malformed' },
    { name: 'signature flipped', method: 'PUT', query: edit(uploadQuery, 'signature', flip(new URLSearchParams(uploadQuery).get('signature')!)), reason: 'mismatch' },
    { name: 'signature upper-case', method: 'PUT', query: edit(uploadQuery, 'signature', new URLSearchParams(uploadQuery).get('signature')!.toUpperCase()), reason: 'malformed' },
    { name: 'signature truncated', method: 'PUT', query: edit(uploadQuery, 'signature', new URLSearchParams(uploadQuery).get('signature')!.slice(0, 63)), reason: 'malformed' },
    { name: 'signature missing', method: 'PUT', query: edit(uploadQuery, 'signature', null), reason: 'malformed' },
    { name: 'signature repeated', method: 'PUT', query: `${uploadQuery}&signature=${'0'.repeat(64)}`, reason: 'malformed' },
    { name: 'expires missing', method: 'GET', query: edit(downloadQuery, 'expires', null), reason: 'malformed' },
    { name: 'expires not a number', method: 'GET', query: edit(downloadQuery, 'expires', 'soon'), reason: 'malformed' },
    { name: 'expires with a leading zero', method: 'GET', query: edit(downloadQuery, 'expires', `0${expires}`), reason: 'malformed' },
    { name: 'expires negative', method: 'GET', query: edit(downloadQuery, 'expires', `-${expires}`), reason: 'malformed' },
    { name: 'size fractional', method: 'PUT', query: edit(uploadQuery, 'size', '12.5'), reason: 'malformed' },
    { name: 'size repeated', method: 'PUT', query: `${uploadQuery}&size=1234`, reason: 'malformed' },
    { name: 'empty query', method: 'GET', query: '', reason: 'malformed' },
    { name: 'expired at the instant', method: 'PUT', query: uploadQuery, at: new Date(expires * 1000), reason: 'expired' },
    { name: 'expired long ago', method: 'GET', query: downloadQuery, at: new Date(expires * 1000 + 86_400_000), reason: 'expired' },
  ];

  it.each(refused)('refuses $name ($reason)', ({ method, path = PATH, query, at, reason }) => {
    expect(verify(method, path, query, at)).toEqual({ ok: false, reason });
  });

  // S3 signs a presigned PUT's Content-Type and compares the header as SigV4 canonicalizes it:
  // trimmed, spaces collapsed, case kept, parameters included.
  const contentTypes: { given: string | undefined; want: boolean }[] = [
    { given: 'text/plain', want: true },
    { given: '  text/plain ', want: true },
    { given: 'text/markdown', want: false },
    { given: 'text/plain; charset=utf-8', want: false },
    { given: 'TEXT/PLAIN', want: false },
    { given: '', want: false },
    { given: undefined, want: false },
  ];
  it.each(contentTypes)('a PUT with Content-Type $given verifies: $want', ({ given, want }) => {
    expect(verifySignedQuery(SECRET, { method: 'PUT', path: PATH, query: new URLSearchParams(uploadQuery), now, contentType: given })).toEqual(
      want ? { ok: true, expires, size: 1234 } : { ok: false, reason: 'mismatch' },
    );
  });

  it('signs no Content-Type into a download', () => {
    expect(verify('GET', PATH, downloadQuery, now, 'application/pdf').ok).toBe(true);
    expect(verify('HEAD', PATH, downloadQuery, now, undefined).ok).toBe(true);
  });

  it('still accepts one second before expiry', () => {
    expect(verify('PUT', PATH, uploadQuery, new Date(expires * 1000 - 1000)).ok).toBe(true);
  });
});

function flip(hex: string): string {
  return `${hex.slice(0, -1)}${hex.endsWith('0') ? '1' : '0'}`;
}
