/**
 * The audit log: who did what to which row, written in the same transaction as the change where
 * there is one. Organization entries are read with organizations.auditLog and go with their
 * organization; platform entries (organizationId null) record user administration and the
 * deletion of organizations, and outlive them. Action names are listed in docs/audit-log.md.
 */
import type { Principal } from '../context.ts';
import type { Db } from '../db/db.ts';
import { newId } from '../ids.ts';

export interface AuditEntry {
  organizationId: string | null;
  action: string;
  actor: Pick<Principal, 'userId' | 'email' | 'impersonatedBy'> | null;
  targetType?: string | null;
  targetId?: string | null;
  metadata?: Record<string, unknown> | null;
}

/** Accepts the pool or a transaction (`sql.begin(tx => ...)`), so the entry commits with the change. */
export async function writeAudit(sql: Db, entry: AuditEntry, at: Date): Promise<string> {
  const id = newId('aud');
  await sql`
    insert into audit_log (id, organization_id, action, actor_id, actor_email, target_type, target_id, impersonated_by, metadata, created_at)
    values (${id}, ${entry.organizationId}, ${entry.action}, ${entry.actor?.userId ?? null}, ${entry.actor?.email ?? null},
            ${entry.targetType ?? null}, ${entry.targetId ?? null}, ${entry.actor?.impersonatedBy ?? null},
            ${entry.metadata ? sql.json(entry.metadata as never) : null}, ${at})`;
  return id;
}
