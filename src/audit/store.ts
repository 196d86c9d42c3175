/**
 * The audit log: who did what to which row, written in the same transaction as the change where
 * there is one. Organization entries are read with organizations.auditLog and go with their
 * organization; platform entries (organizationId null) record user administration and the
 * deletion of organizations, and outlive them. Action names are listed in docs/audit-log.md.
 */
import type { components } from '../../generated/types.ts';
import type { Db } from '../db/db.ts';
import { newId } from '../ids.ts';
import type { CursorPosition } from '../pagination/cursor.ts';

export interface AuditEntry {
  organizationId: string | null;
  action: string;
  /** Who acted (a Principal fits), or null. */
  actor: { userId: string; email: string; impersonatedBy: string | null } | null;
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

/** The contract's AuditLogEntry (date-time fields are Dates). */
export type AuditLogEntry = components['schemas']['AuditLogEntry'];

/**
 * organizations.auditLog: one organization's entries newest first by (created_at, id), after the
 * cursor's position; one row more than the page tells whether another page exists. Served by the
 * audit_log_page index (sql/0002_identity.sql).
 */
export async function pageAuditLog(sql: Db, organizationId: string, limit: number, after: CursorPosition | null) {
  const rows = await sql<(AuditLogEntry & { cursorAt: string })[]>`
    select id, organization_id as "organizationId", action, actor_id as "actorId", actor_email as "actorEmail",
           target_type as "targetType", target_id as "targetId", impersonated_by as "impersonatedBy", metadata,
           created_at as "createdAt", created_at::text as "cursorAt"
    from audit_log
    where organization_id = ${organizationId}
      ${after ? sql`and (created_at, id) < (${after.at}::timestamptz, ${after.id})` : sql``}
    order by created_at desc, id desc
    limit ${limit + 1}`;
  const entries = rows.slice(0, limit).map(({ cursorAt: _cursor, ...entry }) => entry);
  const last = rows.length > limit ? rows[limit - 1]! : null;
  return { entries, last: last ? { at: last.cursorAt, id: last.id } : null };
}
