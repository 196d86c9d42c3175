/**
 * Stripe's remote API played by a local HTTP server, for the endpoints the service calls:
 * customers, Checkout sessions, billing portal sessions, and subscriptions (retrieve, update,
 * cancel). Requests are form-encoded as Stripe's SDK sends them; answers are Stripe-shaped JSON.
 * Tests create subscriptions here (as a completed checkout would) and send the webhook events
 * that follow, signed with the stripe library's test header helper.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';

export interface StandInRequest {
  method: string;
  path: string;
  params: Record<string, string>;
  authorization: string | undefined;
}

export interface StripeStandIn {
  url: string;
  requests: StandInRequest[];
  subscriptions: Map<string, Record<string, any>>;
  /** A subscription as Stripe would hold it after a completed checkout. */
  createSubscription(o: { customer: string; organizationId: string; price: string; plan: string; quantity?: number; status?: string; periodStart?: number; periodEnd?: number }): Record<string, any>;
  /** An event about `object`, `created` seconds since the epoch (now by default). */
  event(type: string, object: Record<string, any>, created?: number): { id: string; payload: string };
  /** The stripe-signature header of `payload` (a stale `timestamp` in seconds to test the tolerance). */
  sign(payload: string, secret: string, timestamp?: number): string;
  close(): Promise<void>;
}

const stripe = new Stripe('sk_test_standin');
let counter = 0;
const id = (prefix: string) => `${prefix}_standin${Date.now().toString(36)}${(++counter).toString(36)}`;

export async function startStripeStandIn(): Promise<StripeStandIn> {
  const requests: StandInRequest[] = [];
  const subscriptions = new Map<string, Record<string, any>>();
  const customers = new Map<string, Record<string, any>>();

  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://stand-in');
      const params = Object.fromEntries(new URLSearchParams(req.method === 'GET' || req.method === 'DELETE' ? url.search : body));
      requests.push({ method: req.method ?? 'GET', path: url.pathname, params, authorization: req.headers.authorization });
      const answer = (status: number, json: unknown) => res.writeHead(status, { 'content-type': 'application/json', 'request-id': id('req') }).end(JSON.stringify(json));
      const missing = () => answer(404, { error: { type: 'invalid_request_error', message: 'No such object', code: 'resource_missing' } });
      const path = url.pathname;
      let match: RegExpExecArray | null;
      if (req.method === 'POST' && path === '/v1/customers') {
        const customer = { id: id('cus'), object: 'customer', email: params.email ?? null, name: params.name ?? null, metadata: metadataOf(params) };
        customers.set(customer.id, customer);
        return answer(200, customer);
      }
      if (req.method === 'POST' && path === '/v1/checkout/sessions') {
        const session = id('cs_test');
        return answer(200, {
          id: session,
          object: 'checkout.session',
          mode: params.mode,
          customer: params.customer,
          url: `https://checkout.stripe.test/c/pay/${session}`,
          metadata: metadataOf(params),
          client_reference_id: params.client_reference_id ?? null,
        });
      }
      if (req.method === 'POST' && path === '/v1/billing_portal/sessions') {
        const session = id('bps');
        return answer(200, { id: session, object: 'billing_portal.session', customer: params.customer, return_url: params.return_url ?? null, url: `https://billing.stripe.test/p/session/${session}` });
      }
      if ((match = /^\/v1\/subscriptions\/([^/]+)$/.exec(path))) {
        const subscription = subscriptions.get(match[1]!);
        if (!subscription) return missing();
        if (req.method === 'GET') return answer(200, subscription);
        if (req.method === 'POST') {
          if (params.cancel_at_period_end !== undefined) {
            subscription.cancel_at_period_end = params.cancel_at_period_end === 'true';
            subscription.cancel_at = subscription.cancel_at_period_end ? subscription.items.data[0].current_period_end : null;
          }
          return answer(200, subscription);
        }
        if (req.method === 'DELETE') {
          Object.assign(subscription, { status: 'canceled', canceled_at: Math.floor(Date.now() / 1000), ended_at: Math.floor(Date.now() / 1000) });
          return answer(200, subscription);
        }
      }
      return answer(404, { error: { type: 'invalid_request_error', message: `Unrecognized request URL (${req.method}: ${path})` } });
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    requests,
    subscriptions,
    createSubscription(o) {
      const now = Math.floor(Date.now() / 1000);
      const start = o.periodStart ?? now - 3600;
      const end = o.periodEnd ?? start + 30 * 86400;
      const subscription = {
        id: id('sub'),
        object: 'subscription',
        customer: o.customer,
        status: o.status ?? 'active',
        cancel_at_period_end: false,
        cancel_at: null,
        canceled_at: null,
        trial_end: null,
        created: now,
        metadata: { organizationId: o.organizationId, plan: o.plan },
        items: {
          object: 'list',
          data: [
            {
              id: id('si'),
              object: 'subscription_item',
              quantity: o.quantity ?? 1,
              current_period_start: start,
              current_period_end: end,
              price: { id: o.price, object: 'price', recurring: { interval: o.price.endsWith('year') ? 'year' : 'month' } },
            },
          ],
        },
      };
      subscriptions.set(subscription.id, subscription);
      return subscription;
    },
    event(type, object, created = Math.floor(Date.now() / 1000)) {
      const eventId = id('evt');
      return {
        id: eventId,
        payload: JSON.stringify({ id: eventId, object: 'event', api_version: '2026-10-28.endive', created, type, livemode: false, pending_webhooks: 1, data: { object: structuredClone(object) } }),
      };
    },
    sign(payload, secret, timestamp) {
      return stripe.webhooks.generateTestHeaderString({ payload, secret, ...(timestamp ? { timestamp } : {}) });
    },
    close: async () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** `metadata[key]=value` form fields as an object. */
function metadataOf(params: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(params).flatMap(([key, value]) => {
      const m = /^metadata\[(.+)\]$/.exec(key);
      return m ? [[m[1]!, value]] : [];
    }),
  );
}
