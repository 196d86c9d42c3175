/**
 * Identity routes: sign-up, sign-in, sign-out and the session routes. A session is identified by
 * the id half of its token; answers never carry a token except where a session is created.
 */
import { ApiError } from '../../contract/errors.ts';
import { type AuthHandlers, signedIn } from '../../context.ts';
import { deleteOwnSession, deleteSession, deleteUserSessions, listUserSessions } from '../sessions.ts';
import { emailSignInRoutes } from './email-sign-in.ts';
import { findSession } from '../sessions-store.ts';
import { findUser } from '../users-store.ts';
import { toSession, toUser } from '../views.ts';

export const sessionRoutes = {
  ...emailSignInRoutes,

  async 'auth.signOut'(_input, ctx) {
    const principal = signedIn(ctx);
    await deleteSession(ctx.services.db.sql, principal.sessionId);
    return { body: { success: true }, clearSession: true };
  },

  /** Never 401: no valid session is simply null. The session middleware has already renewed it. */
  async 'auth.getSession'(_input, ctx) {
    if (!ctx.principal) return { body: null };
    const { sql } = ctx.services.db;
    const [session, user] = await Promise.all([findSession(sql, ctx.principal.sessionId), findUser(sql, ctx.principal.userId)]);
    // Gone between authentication and now (signed out or revoked in parallel).
    if (!session || !user) return { body: null };
    return { body: { session: toSession(session, session.id), user: toUser(user, ctx.services.now()) } };
  },

  async 'auth.listSessions'(_input, ctx) {
    const principal = signedIn(ctx);
    const sessions = await listUserSessions(ctx.services.db.sql, principal.userId, ctx.services.now());
    return { body: sessions.map((session) => toSession(session, principal.sessionId)) };
  },

  async 'auth.revokeSession'(input, ctx) {
    const principal = signedIn(ctx);
    if (!(await deleteOwnSession(ctx.services.db.sql, principal.userId, input.id))) throw new ApiError('NOT_FOUND');
    return { body: { status: true }, clearSession: input.id === principal.sessionId };
  },

  async 'auth.revokeOtherSessions'(_input, ctx) {
    const principal = signedIn(ctx);
    await deleteUserSessions(ctx.services.db.sql, principal.userId, principal.sessionId);
    return { body: { status: true } };
  },

  async 'auth.revokeSessions'(_input, ctx) {
    const principal = signedIn(ctx);
    await deleteUserSessions(ctx.services.db.sql, principal.userId);
    return { body: { status: true }, clearSession: true };
  },
} satisfies AuthHandlers;
