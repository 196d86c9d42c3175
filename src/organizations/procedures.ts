/**
 * The organizations group's procedures (the identity routes of organizations live in routes.ts).
 * Access is the binding layer's: organizations.usage for any member, organizations.auditLog with
 * auditLog:read (owners and admins).
 */
import type { Handlers } from '../context.ts';
import { pageAuditLog } from '../audit/store.ts';
import { usageOf } from '../credits/usage.ts';
import { decodeCursor, encodeCursor } from '../pagination/cursor.ts';

export const organizationProcedures = {
  'organizations.usage': async (input, ctx) => {
    const { db, plans } = ctx.services;
    const plan = await plans.limitsFor(input.organizationId);
    const { usage, period } = await usageOf(db.sql, input.organizationId, plan, ctx.services.now());
    return { plan: plan?.plan ?? null, limits: plan?.limits ?? null, usage, period };
  },

  'organizations.auditLog': async (input, ctx) => {
    const { secret, db } = ctx.services;
    // Scoped to the organization: another organization's cursor (or another list's) answers 400.
    const scope = `audit:${input.organizationId}`;
    const after = input.cursor ? decodeCursor(secret, input.cursor, scope) : null;
    const page = await pageAuditLog(db.sql, input.organizationId, input.limit ?? 50, after);
    return { entries: page.entries, nextCursor: page.last ? encodeCursor(secret, page.last, scope) : null };
  },
} satisfies Handlers;
