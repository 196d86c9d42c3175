/**
 * The Stripe client of the configured billing settings, made once per service (on first use). STRIPE_API_URL
 * (tests: a local stand-in) becomes the client's protocol, host and port; Stripe itself otherwise.
 * The package loads on first use: it is a fifth of a second of every start otherwise, and most
 * deployments (and every start without billing) never call Stripe. Its calls make spans while
 * tracing is on (stripe-spans.ts).
 */
import type Stripe from 'stripe';
import type { BillingSettings } from '../config.ts';
import { withStripeSpans } from './stripe-spans.ts';

/** Answers the service's Stripe client, made on the first call; billing not configured is the caller's to refuse first. */
export type StripeClient = () => Promise<Stripe>;

export function stripeClient(settings: BillingSettings | null): StripeClient {
  let client: Promise<Stripe> | undefined;
  return () => (client ??= makeClient(settings));
}

async function makeClient(settings: BillingSettings | null): Promise<Stripe> {
  if (!settings) throw new Error('billing is not configured: refuse with 412 before asking for the Stripe client');
  const { default: Stripe } = await import('stripe');
  const api = settings.apiUrl ? new URL(settings.apiUrl) : null;
  const client = new Stripe(settings.secretKey, {
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
  return withStripeSpans(client, Stripe.StripeResource);
}
