/**
 * The Stripe client of the configured billing settings, made once per settings object. STRIPE_API_URL
 * (tests: a local stand-in) becomes the client's protocol, host and port; Stripe itself otherwise.
 * The package loads on first use: it is a fifth of a second of every start otherwise, and most
 * deployments (and every start without billing) never call Stripe.
 */
import type Stripe from 'stripe';
import type { BillingSettings } from '../config.ts';

const clients = new WeakMap<BillingSettings, Stripe>();

export async function stripeClient(settings: BillingSettings): Promise<Stripe> {
  let client = clients.get(settings);
  if (!client) {
    const { default: Stripe } = await import('stripe');
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
