/** How this service talks to a provider's endpoints, the same for GitHub and Google. */

/** Each call to a provider gives up after this long, so a hung provider cannot hold the callback. */
export const PROVIDER_TIMEOUT_MS = 10_000;

/**
 * oauth4webapi refuses http:// endpoints; tests run the provider on loopback, so plain http is
 * allowed there and nowhere else.
 */
export function isLoopbackHttp(url: string): boolean {
  const { protocol, hostname } = new URL(url);
  return protocol === 'http:' && (hostname === '127.0.0.1' || hostname === 'localhost' || hostname === '[::1]');
}
