/**
 * Content-Disposition for downloads (RFC 6266 with RFC 8187/5987 `filename*`): an ASCII
 * `filename` for old clients and the exact UTF-8 name in `filename*`, which current browsers
 * prefer. Used by the local /uploads route and as S3's ResponseContentDisposition.
 *
 *   attachment; filename="Resume.pdf"; filename*=UTF-8''R%C3%A9sum%C3%A9.pdf
 */

/** Longest name kept, in code points; longer names are cut in the middle of the stem. */
export const MAX_FILENAME_LENGTH = 200;
const FALLBACK = 'download';
const MAX_EXTENSION = 16;

// C0, DEL and C1 controls never belong in a header or a saved file name.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

export function contentDisposition(filename: string, type: 'attachment' | 'inline' = 'attachment'): string {
  const name = truncate(clean(filename));
  return `${type}; filename="${asciiFallback(name)}"; filename*=UTF-8''${encodeRfc8187(name)}`;
}

/** Lone surrogates become U+FFFD, controls become "_", surrounding whitespace goes. */
function clean(filename: string): string {
  const name = filename.toWellFormed().replace(CONTROL, '_').trim();
  return name === '' ? FALLBACK : name;
}

/** Keeps the extension when a name is cut, so the saved file still opens with the right program. */
function truncate(name: string, max = MAX_FILENAME_LENGTH): string {
  const chars = Array.from(name);
  if (chars.length <= max) return name;
  const dot = name.lastIndexOf('.');
  const extension = dot > 0 && name.length - dot <= MAX_EXTENSION ? Array.from(name.slice(dot)) : [];
  return [...chars.slice(0, max - extension.length), ...extension].join('');
}

/**
 * Printable ASCII inside a quoted-string: accents are dropped (é -> e), anything else non-ASCII
 * becomes "_". Quotes and backslashes become "_" too (escaping them is parsed differently by
 * different clients), as does "%" (some clients percent-decode the plain filename).
 */
function asciiFallback(name: string): string {
  const ascii = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^\x20-\x7e]/gu, '_')
    .replace(/["\\%]/g, '_');
  return truncate(ascii);
}

/**
 * RFC 8187 value-chars: UTF-8 bytes, everything outside attr-char percent-encoded.
 * encodeURIComponent leaves A-Z a-z 0-9 - _ . ! ~ * ' ( ) alone; of those, * ' ( ) are not attr-char.
 */
function encodeRfc8187(name: string): string {
  return encodeURIComponent(name).replace(/[*'()]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
