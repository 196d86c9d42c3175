/** The organization's Stripe customer (organizations.payment_customer_id). */
import type { Db } from '../db/db.ts';

export async function customerOf(db: Db, organizationId: string): Promise<string | null> {
  const [row] = await db<{ payment_customer_id: string | null }[]>`select payment_customer_id from organizations where id = ${organizationId}`;
  return row?.payment_customer_id ?? null;
}

/** Records the customer unless one is recorded already; answers the one that stands. */
export async function setCustomer(db: Db, organizationId: string, customerId: string): Promise<string> {
  const [row] = await db<{ payment_customer_id: string }[]>`
    update organizations set payment_customer_id = coalesce(payment_customer_id, ${customerId}) where id = ${organizationId}
    returning payment_customer_id`;
  return row?.payment_customer_id ?? customerId;
}

/** The organization whose Stripe customer this is, or null. */
export async function organizationOfCustomer(db: Db, customerId: string): Promise<string | null> {
  const [row] = await db<{ id: string }[]>`select id from organizations where payment_customer_id = ${customerId}`;
  return row?.id ?? null;
}
