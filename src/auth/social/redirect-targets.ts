/**
 * Where a social sign-in sends the browser afterwards: a path on this host, or an address on a
 * trusted origin (TRUSTED_ORIGINS, WEB_URL, PUBLIC_URL). Anything else would make the callback an
 * open redirect, so sign-in/social refuses it and the callback checks the cookie's copy again.
 */
import type { Config } from '../../config.ts';
import { allowedOrigins } from '../../http/cors.ts';

export function trustedRedirectOrigins(config: Config): Set<string> {
  const origins = allowedOrigins(config);
  origins.add(new URL(config.publicUrl).origin);
  return origins;
}

export function isAllowedRedirect(target: string, trusted: Set<string>): boolean {
  // Browsers drop tabs and newlines inside URLs, so "/\t/evil.example" would become "//evil.example".
  if (/[\u0000-\u001f\u007f\\]/.test(target)) return false;
  if (target.startsWith('/')) return !target.startsWith('//');
  if (!URL.canParse(target)) return false;
  const url = new URL(target);
  return (url.protocol === 'https:' || url.protocol === 'http:') && trusted.has(url.origin);
}

/** The web app when WEB_URL is set, else the root of this host. */
export function defaultRedirect(config: Config): string {
  return config.webUrl ?? '/';
}

/** `target` with `error=<code>` in its query, keeping what the query had. */
export function withError(target: string, code: string): string {
  const url = new URL(target, 'http://relative.invalid');
  url.searchParams.set('error', code);
  return target.startsWith('/') ? `${url.pathname}${url.search}${url.hash}` : url.href;
}
