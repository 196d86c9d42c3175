/**
 * Rows as the identity routes answer them (openapi/auth/schemas/AuthUser.yaml and Session.yaml):
 * camelCase, and never a secret. Other identity modules that answer users can reuse toUser.
 */
import type { AuthRouteOutput } from '../../generated/auth-routes.ts';
import { isBanned } from './sessions.ts';
import type { Session } from './sessions-store.ts';
import type { User } from './users-store.ts';

export type UserView = AuthRouteOutput<'auth.signInEmail'>['user'];
export type SessionView = AuthRouteOutput<'auth.listSessions'>[number];

/** `banned` says whether a ban is in force now: a ban past its end reads as no ban at all. */
export function toUser(row: User, now: Date): UserView {
  const banned = isBanned(row, now);
  return {
    id: row.id,
    email: row.email,
    emailVerified: row.emailVerified,
    name: row.name,
    image: row.image,
    role: row.role,
    banned,
    banReason: banned ? row.banReason : null,
    banExpiresAt: banned ? row.banExpiresAt : null,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

export function toSession(row: Session, currentSessionId: string | undefined): SessionView {
  return {
    id: row.id,
    userId: row.userId,
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
    lastVerifiedAt: row.lastVerifiedAt,
    ipAddress: row.ipAddress,
    userAgent: row.userAgent,
    impersonatedBy: row.impersonatedBy,
    current: row.id === currentSessionId,
  };
}
