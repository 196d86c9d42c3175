/**
 * Who pays for an organization's work (issue 40, "Fairness by owner"; docs/jobs.md, "Fairness"):
 * the organization itself while it has a paid plan (its subscription, one Stripe customer per
 * organization), else its first owner (members-store.ts firstOwnerOf), the same whether billing is
 * on or off. Organizations cost nothing to create, so turns in the job queue, the queued-job cap
 * and the AI service's queues go by payer: a user who owns many free organizations gets what one
 * gets. An organization with no owner left pays for itself.
 */
import type { Db } from '../db/db.ts';
import type { PlanLimits } from '../credits/plans.ts';
import { firstOwnerOf } from './members-store.ts';

/** `org:<organization id>` or `usr:<user id>`: a key, never shown to users. */
export type Payer = `org:${string}` | `usr:${string}`;

export async function payerOf(db: Db, organizationId: string, plan: PlanLimits | null): Promise<Payer> {
  if (plan && plan.plan !== 'free') return `org:${organizationId}`;
  const owner = await firstOwnerOf(db, organizationId);
  return owner ? `usr:${owner}` : `org:${organizationId}`;
}
