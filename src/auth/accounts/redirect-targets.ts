/**
 * Where identity routes may send a browser (callbackURL, redirectTo): a path, or an absolute
 * http(s) address on a trusted origin (TRUSTED_ORIGINS, WEB_URL, PUBLIC_URL). Anything else would
 * make the service an open redirect, or mail a user a link that hands their token to a stranger.
 */
import type { Config } from '../../config.ts';
import { allowedOrigins } from '../../http/cors.ts';
import { badRequest } from '../../http/errors.ts';

type Origins = Pick<Config, 'trustedOrigins' | 'webUrl' | 'publicUrl'>;

/** Throws 400 BAD_REQUEST with an issue on `field` unless `value` is absent, a path or a trusted address. */
export function checkRedirectTarget(config: Origins, field: string, value: string | undefined): void {
  if (value === undefined || isSafePath(value) || isTrustedAddress(config, value)) return;
  throw badRequest([{ path: [field], message: 'must be a path or an address on a trusted origin' }]);
}

/**
 * The target as an absolute address, for emailed links. A path is on this host (PUBLIC_URL), as
 * it is for a browser following a relative redirect from here (and as sign-in/social reads it).
 */
export function absoluteTarget(config: Origins, value: string): string {
  return new URL(value, `${config.publicUrl}/`).toString();
}

/** `target` with `name=value` set in its query (replacing any value already there). */
export function withQuery(target: string, params: Record<string, string>): string {
  const url = new URL(target);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return url.toString();
}

// "//evil.example" and "/\evil.example" are paths to a URL parser but other hosts to a browser.
function isSafePath(value: string): boolean {
  return value.startsWith('/') && !value.startsWith('//') && !/[\\\s\u0000-\u001f\u007f]/.test(value);
}

function isTrustedAddress(config: Origins, value: string): boolean {
  if (!URL.canParse(value)) return false;
  const url = new URL(value);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return false;
  const trusted = allowedOrigins(config);
  trusted.add(new URL(config.publicUrl).origin);
  return trusted.has(url.origin);
}
