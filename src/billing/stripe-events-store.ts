/** Stripe events already handled (stripe_events): each event id is handled once. */
import type { Db } from '../db/db.ts';

export async function wasHandled(db: Db, eventId: string): Promise<boolean> {
  const [row] = await db`select 1 from stripe_events where id = ${eventId}`;
  return row !== undefined;
}

/**
 * Claims the event inside the transaction that handles it: false when another delivery claimed it
 * first (the insert waits for that one's commit, then conflicts). A failed handling rolls the claim
 * back with everything else, so Stripe's retry handles it again.
 */
export async function claimEvent(tx: Db, event: { id: string; type: string; created: Date }): Promise<boolean> {
  const rows = await tx`insert into stripe_events (id, type, created_at) values (${event.id}, ${event.type}, ${event.created}) on conflict (id) do nothing returning id`;
  return rows.length === 1;
}
