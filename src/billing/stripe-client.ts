/**
 * The Stripe client of the configured billing settings, made once per settings object. STRIPE_API_URL
 * (tests: a local stand-in) becomes the client's protocol, host and port; Stripe itself otherwise.
 */
import Stripe from 'stripe';
import type { BillingSettings } from '../config.ts';

const clients = new WeakMap<BillingSettings, Stripe>();

export function stripeClient(settings: BillingSettings): Stripe {
  let client = clients.get(settings);
  if (!client) {
    const api = settings.apiUrl ? new URL(settings.apiUrl) : null;
    client = new Stripe(settings.secretKey, {
      // Stripe retries idempotent-safe failures itself (it sends an idempotency key with each POST).
      maxNetworkRetries: 1,
      timeout: 20_000,
      ...(api
        ? {
            protocol: api.protocol === 'http:' ? 'http' : 'https',
            host: api.hostname,
            port: api.port || (api.protocol === 'http:' ? 80 : 443),
          }
        : {}),
    });
    clients.set(settings, client);
  }
  return client;
}
