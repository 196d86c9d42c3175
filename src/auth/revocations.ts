/**
 * Revoked access, announced to every API instance so that the jobs.stream connections it
 * affects end at once (specification, Authentication item 9: removing the member, changing their
 * role, revoking their sessions or banning them ends the connection), not at the stream's next
 * periodic re-check.
 *
 * The store function that revokes calls `announceRevocation` with the connection it wrote on:
 * inside its transaction, so the notification goes out when the change commits and not at all when
 * it rolls back; or right after a single statement on the pool. It sends
 * `pg_notify('access_revoked', <what>)`, which each service LISTENs to (`Database.listen`,
 * src/jobs/stream-revocations.ts): on a database server every instance hears it; on the embedded
 * database the one session listens, and PGlite delivers it its own notification once the change
 * has committed. Nothing is announced in process: the database delivers, after commit, per service.
 *
 * A revocation only names whose access changed; each stream it may concern runs its authorization
 * again (`EventSink.authorized`) and ends if that fails. So announcing too much costs a query per
 * affected stream, never a wrongly ended one.
 */
import type { Db } from '../db/db.ts';

export const ACCESS_REVOKED_CHANNEL = 'access_revoked';

export type Revocation =
  /** One session ended (signed out, revoked). */
  | { kind: 'session'; sessionId: string }
  /** A user's sessions ended, or the user was banned or deleted; also ends the impersonations they run. */
  | { kind: 'user'; userId: string }
  /** A membership was removed or its role changed. */
  | { kind: 'member'; organizationId: string; userId: string }
  /** The organization was deleted. */
  | { kind: 'organization'; organizationId: string };

/** What a stream's access hangs on: the call's principal and organization. */
export interface AccessHolder {
  userId: string;
  sessionId: string;
  impersonatedBy: string | null;
  organizationId: string;
}

/**
 * Announces a revocation on `db`: the transaction that revoked (the notification is delivered on
 * commit) or the pool right after the revoking statement.
 */
export async function announceRevocation(db: Db, revocation: Revocation): Promise<void> {
  await db`select pg_notify(${ACCESS_REVOKED_CHANNEL}, ${JSON.stringify(revocation)})`;
}

/** The revocation a notification's payload carries; null for a payload that is none of ours. */
export function parseRevocation(payload: string): Revocation | null {
  try {
    const value = JSON.parse(payload) as Partial<Record<string, unknown>> | null;
    const text = (key: string) => typeof value?.[key] === 'string';
    switch (value?.kind) {
      case 'session':
        return text('sessionId') ? (value as Revocation) : null;
      case 'user':
        return text('userId') ? (value as Revocation) : null;
      case 'member':
        return text('organizationId') && text('userId') ? (value as Revocation) : null;
      case 'organization':
        return text('organizationId') ? (value as Revocation) : null;
      default:
        return null;
    }
  } catch {
    return null;
  }
}

/** Whether the access of `holder` may have been revoked: its stream should re-check. */
export function concerns(revocation: Revocation, holder: AccessHolder): boolean {
  switch (revocation.kind) {
    case 'session':
      return holder.sessionId === revocation.sessionId;
    case 'user':
      return holder.userId === revocation.userId || holder.impersonatedBy === revocation.userId;
    case 'member':
      return holder.organizationId === revocation.organizationId && holder.userId === revocation.userId;
    case 'organization':
      return holder.organizationId === revocation.organizationId;
  }
}
