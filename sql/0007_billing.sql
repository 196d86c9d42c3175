-- Stripe billing (src/billing/): the webhook keeps `subscriptions` in step with Stripe.
-- organizations.payment_customer_id (0002) holds the organization's Stripe customer.

-- One customer per organization: two organizations never share one.
create unique index organizations_payment_customer_id on organizations (payment_customer_id);

-- payment_failed follows the subscription's invoices (invoice.payment_failed sets it,
-- invoice.paid clears it). The *_event_at columns hold the Stripe `created` time of the event
-- each part was last written from: an older event delivered late changes nothing.
alter table subscriptions
  add column payment_failed boolean not null default false,
  add column state_event_at timestamptz,
  add column payment_event_at timestamptz;

-- Webhook deliveries already handled, by Stripe's event id: a replayed or retried delivery is
-- acknowledged and changes nothing. Platform-wide (no organization): kept when one is deleted.
create table stripe_events (
  id text primary key,
  type text not null,
  created_at timestamptz not null,
  received_at timestamptz not null default now()
);
