/**
 * admin.flags.list, upsert, delete and setOverride. The binding layer has checked that the caller
 * is a platform admin and, for delete and setOverride, loaded the flag (404 when there is none).
 * Every change is audited at platform level (docs/audit-log.md), in its own transaction.
 */
import type { Context, Handlers } from '../context.ts';
import { ApiError } from '../contract/errors.ts';
import { writeAudit, type AuditEntry } from '../audit/store.ts';
import { deleteFlag, findFlag, listFlags, setOverride, upsertFlag } from '../flags/store.ts';

const FLAG_NOT_FOUND = 'Feature flag not found.';

export const flagProcedures = {
  'admin.flags.list': (_input, ctx) => listFlags(ctx.services.db.sql),

  'admin.flags.upsert': async (input, ctx) => {
    const now = ctx.services.now();
    return ctx.services.db.sql.begin(async (tx) => {
      const { before, after } = await upsertFlag(tx, input.key, { description: input.description, enabled: input.enabled }, now);
      if (before === null) {
        await writeAudit(tx, audit(ctx, 'flag.created', input.key, { description: after.description, enabled: after.enabled }), now);
      } else {
        const changes = Object.fromEntries((['description', 'enabled'] as const).filter((field) => before[field] !== after[field]).map((field) => [field, { from: before[field], to: after[field] }]));
        if (Object.keys(changes).length > 0) await writeAudit(tx, audit(ctx, 'flag.updated', input.key, { changes }), now);
      }
      return (await findFlag(tx, input.key))!;
    });
  },

  'admin.flags.delete': async (input, ctx) => {
    const now = ctx.services.now();
    const deleted = await ctx.services.db.sql.begin(async (tx) => {
      const gone = await deleteFlag(tx, input.key);
      if (gone) {
        const { description, enabled } = gone.flag;
        await writeAudit(tx, audit(ctx, 'flag.deleted', input.key, { description, enabled, overrides: gone.overrides }), now);
      }
      return gone;
    });
    // Deleted by someone else since the binding layer loaded it.
    if (!deleted) throw new ApiError('NOT_FOUND', { message: FLAG_NOT_FOUND });
    return { key: input.key };
  },

  'admin.flags.setOverride': async (input, ctx) => {
    const now = ctx.services.now();
    const outcome = await ctx.services.db.sql.begin(async (tx) => {
      const result = await setOverride(tx, input.key, input.organizationId, input.enabled, now);
      if (result.kind === 'done' && result.from !== result.to) {
        const action = result.to === null ? 'flag.override_removed' : 'flag.override_set';
        await writeAudit(tx, audit(ctx, action, input.key, { organizationId: input.organizationId, from: result.from, to: result.to }), now);
      }
      return result.kind === 'done' ? { ...result, flag: (await findFlag(tx, input.key))! } : result;
    });
    // no-flag: deleted by someone else since the binding layer loaded it.
    if (outcome.kind === 'no-flag') throw new ApiError('NOT_FOUND', { message: FLAG_NOT_FOUND });
    if (outcome.kind === 'no-organization') throw new ApiError('NOT_FOUND', { message: 'Organization not found.' });
    return outcome.flag;
  },
} satisfies Handlers;

/** A platform-level entry (no organization): flags belong to the platform, and so do their overrides. */
function audit(ctx: Context<unknown>, action: string, key: string, metadata: Record<string, unknown>): AuditEntry {
  return { organizationId: null, action, actor: ctx.principal, targetType: 'flag', targetId: key, metadata };
}
