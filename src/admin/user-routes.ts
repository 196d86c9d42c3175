/**
 * Identity routes: platform admin user operations (auth.admin.*). The router has already checked
 * `x-access: platform-admin` (403 for anyone else); these handlers add the rules about whom an
 * admin may act on (not oneself, not another admin's session) and write platform-level audit
 * entries with the admin as the actor.
 */
import { type AuthHandlers, signedIn } from '../context.ts';
import { isBanned, sessionExpiry } from '../auth/sessions.ts';
import type { Principal } from '../auth/principal.ts';
import { ApiError } from '../contract/errors.ts';
import { toSession, toUser } from '../auth/views.ts';
import { findUser } from '../auth/users-store.ts';
import { listUsers } from './users-store.ts';
import * as userAdmin from './user-admin.ts';

export const adminUserRoutes = {
  'auth.admin.listUsers': async (input, ctx) => {
    const { users, total } = await listUsers(ctx.services.db.sql, {
      field: input.searchField ?? 'email',
      value: input.searchValue,
      limit: input.limit ?? 25,
      offset: input.offset ?? 0,
    });
    return { body: { users: users.map((user) => toUser(user, ctx.services.now())), total } };
  },

  'auth.admin.setRole': async (input, ctx) => {
    const admin = signedIn(ctx);
    notOnOneself(admin, input.userId, 'change your own platform role');
    const user = await userAdmin.setUserRole(ctx.services.db.sql, { userId: input.userId, role: input.role, actor: admin, now: ctx.services.now() });
    return { body: { user: toUser(found(user), ctx.services.now()) } };
  },

  'auth.admin.banUser': async (input, ctx) => {
    const admin = signedIn(ctx);
    notOnOneself(admin, input.userId, 'ban yourself');
    const now = ctx.services.now();
    const result = await userAdmin.banUser(ctx.services.db.sql, {
      userId: input.userId,
      reason: input.banReason ?? null,
      expiresAt: input.banExpiresIn === undefined ? null : new Date(now.getTime() + input.banExpiresIn * 1000),
      actor: admin,
      now,
    });
    const { user, sessionsEnded } = found(result);
    ctx.log.info({ userId: user.id, sessionsEnded }, 'user banned');
    return { body: { user: toUser(user, ctx.services.now()) } };
  },

  'auth.admin.unbanUser': async (input, ctx) => {
    const user = await userAdmin.unbanUser(ctx.services.db.sql, { userId: input.userId, actor: signedIn(ctx), now: ctx.services.now() });
    return { body: { user: toUser(found(user), ctx.services.now()) } };
  },

  'auth.admin.impersonateUser': async (input, ctx) => {
    const admin = signedIn(ctx);
    if (admin.impersonatedBy) throw new ApiError('FORBIDDEN', { message: 'Stop impersonating before impersonating someone else.' });
    notOnOneself(admin, input.userId, 'impersonate yourself');
    const now = ctx.services.now();
    const target = found(await findUser(ctx.services.db.sql, input.userId));
    if (target.role === 'admin') throw new ApiError('FORBIDDEN', { message: 'Platform admins cannot be impersonated.' });
    // The session would be refused on its first use (banned users have no valid sessions).
    if (isBanned(target, now)) throw new ApiError('FORBIDDEN', { message: 'Banned users cannot be impersonated.' });
    const { token, session } = await userAdmin.startAuditedSession(ctx.services.db.sql, {
      userId: target.id,
      impersonatedBy: admin.userId,
      ip: ctx.ip,
      userAgent: ctx.userAgent,
      now,
      audit: { action: 'user.impersonation_started', actor: admin, targetId: target.id, metadata: { adminSessionId: admin.sessionId } },
    });
    return { body: { session: toSession(session, session.id), user: toUser(target, ctx.services.now()) }, session: { token, expiresAt: sessionExpiry(session) } };
  },

  'auth.admin.stopImpersonating': async (_input, ctx) => {
    const principal = signedIn(ctx);
    if (!principal.impersonatedBy) {
      throw new ApiError('PRECONDITION_FAILED', { message: 'This session is not an impersonation session.' });
    }
    const now = ctx.services.now();
    const sql = ctx.services.db.sql;
    // Deleting a user deletes the impersonation sessions they started, so an admin gone since this
    // session was authenticated means the session has ended with them: 401, as for any ended session.
    const admin = await findUser(sql, principal.impersonatedBy);
    if (!admin) throw new ApiError('UNAUTHORIZED', { message: 'This session has ended.' });
    if (isBanned(admin, now)) {
      throw new ApiError('FORBIDDEN', { message: 'The platform admin behind this session is banned.' });
    }
    const { token, session } = await userAdmin.startAuditedSession(sql, {
      userId: admin.id,
      impersonatedBy: null,
      ip: ctx.ip,
      userAgent: ctx.userAgent,
      now,
      endSessionId: principal.sessionId,
      audit: {
        action: 'user.impersonation_stopped',
        actor: { userId: admin.id, email: admin.email, impersonatedBy: null },
        targetId: principal.userId,
        metadata: { impersonationSessionId: principal.sessionId },
      },
    });
    return { body: { session: toSession(session, session.id), user: toUser(admin, ctx.services.now()) }, session: { token, expiresAt: sessionExpiry(session) } };
  },

  'auth.admin.revokeUserSessions': async (input, ctx) => {
    const admin = signedIn(ctx);
    found(await userAdmin.revokeUserSessions(ctx.services.db.sql, { userId: input.userId, actor: admin, now: ctx.services.now() }));
    // An admin who revokes their own sessions has just ended this one too.
    return { body: { success: true }, ...(input.userId === admin.userId ? { clearSession: true } : {}) };
  },

  'auth.admin.removeUser': async (input, ctx) => {
    const admin = signedIn(ctx);
    notOnOneself(admin, input.userId, 'delete your own account here');
    const result = await userAdmin.removeUser(ctx.services.db.sql, { userId: input.userId, actor: admin, now: ctx.services.now() });
    if (!result.removed && result.reason === 'not_found') throw new ApiError('NOT_FOUND', { message: 'User not found.' });
    if (!result.removed && result.reason === 'last_owner') {
      throw new ApiError('CONFLICT', {
        message: `The user is the last owner of ${result.organizationIds.length === 1 ? 'an organization' : `${result.organizationIds.length} organizations`} (${result.organizationIds.join(', ')}): make another member owner, or delete the organization first.`,
      });
    }
    return { body: { success: true } };
  },
} satisfies AuthHandlers;

function notOnOneself(admin: Principal, userId: string, what: string): void {
  if (admin.userId === userId) throw new ApiError('FORBIDDEN', { message: `You cannot ${what}.` });
}

function found<T>(value: T | null): T {
  if (value === null) throw new ApiError('NOT_FOUND', { message: 'User not found.' });
  return value;
}
