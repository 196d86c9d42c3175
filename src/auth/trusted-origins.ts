/**
 * The trusted origins: TRUSTED_ORIGINS, the web app and this service itself. CORS, the CSRF check
 * and redirect targets all use this one set.
 */
import type { Config } from '../config.ts';

export function allowedOrigins(config: Pick<Config, 'trustedOrigins' | 'webUrl' | 'publicUrl'>): Set<string> {
  const origins = new Set(config.trustedOrigins);
  if (config.webUrl) origins.add(new URL(config.webUrl).origin);
  origins.add(new URL(config.publicUrl).origin);
  return origins;
}
