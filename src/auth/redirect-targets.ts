/**
 * Where identity routes may send a browser (callbackURL, errorCallbackURL, redirectTo): a path on
 * this host, or an absolute http(s) address on a trusted origin (TRUSTED_ORIGINS, WEB_URL,
 * PUBLIC_URL). Anything else would make the service an open redirect, or mail a user a link that
 * hands their token to a stranger.
 */
import type { Config } from '../config.ts';
import { allowedOrigins } from './trusted-origins.ts';
import { badRequest } from '../contract/errors.ts';

type Origins = Pick<Config, 'trustedOrigins' | 'webUrl' | 'publicUrl'>;

/** `trusted` is the service's one trusted-origin set (trusted-origins.ts). */
export function isAllowedRedirect(target: string, trusted: Set<string>): boolean {
  // Browsers drop tabs and newlines inside URLs, so "/\t/evil.example" would become "//evil.example";
  // "//evil.example" and "/\evil.example" are paths to a URL parser but other hosts to a browser.
  if (/[\s\u0000-\u001f\u007f\\]/.test(target)) return false;
  if (target.startsWith('/')) return !target.startsWith('//');
  if (!URL.canParse(target)) return false;
  const url = new URL(target);
  return (url.protocol === 'https:' || url.protocol === 'http:') && trusted.has(url.origin);
}

/** Throws 400 BAD_REQUEST with an issue on `field` unless `value` is absent or an allowed target. */
export function checkRedirectTarget(config: Origins, field: string, value: string | undefined): void {
  if (value === undefined || isAllowedRedirect(value, allowedOrigins(config))) return;
  throw badRequest([{ path: [field], message: 'must be a path or an address on a trusted origin' }]);
}

/** The web app when WEB_URL is set, else the root of this host. */
export function defaultRedirect(config: Pick<Config, 'webUrl'>): string {
  return config.webUrl ?? '/';
}

/** The target as an absolute address, for emailed links: a path is on this host (PUBLIC_URL). */
export function absoluteTarget(config: Pick<Config, 'publicUrl'>, value: string): string {
  return new URL(value, `${config.publicUrl}/`).toString();
}

/** An absolute `target` with `name=value` set in its query (replacing any value already there). */
export function withQuery(target: string, params: Record<string, string>): string {
  const url = new URL(target);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return url.toString();
}

/** `target` (a path or an address) with `error=<code>` in its query, keeping what the query had. */
export function withError(target: string, code: string): string {
  const url = new URL(target, 'http://relative.invalid');
  url.searchParams.set('error', code);
  return target.startsWith('/') ? `${url.pathname}${url.search}${url.hash}` : url.href;
}
