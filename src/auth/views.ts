/**
 * Rows as the identity routes answer them (openapi/auth/schemas/AuthUser.yaml and Session.yaml):
 * camelCase, and never a secret. Other identity modules that answer users can reuse toUser.
 */
import type { AuthRouteOutput } from '../../generated/auth-routes.ts';
import { isBanned, type SessionRow, type UserRow } from './sessions.ts';

export type UserView = AuthRouteOutput<'auth.signInEmail'>['user'];
export type SessionView = AuthRouteOutput<'auth.listSessions'>[number];

/** `banned` says whether a ban is in force now: a ban past its end reads as no ban at all. */
export function toUser(row: UserRow, now: Date): UserView {
  const banned = isBanned(row, now);
  return {
    id: row.id,
    email: row.email,
    emailVerified: row.email_verified,
    name: row.name,
    image: row.image,
    role: row.role,
    banned,
    banReason: banned ? row.ban_reason : null,
    banExpiresAt: banned ? row.ban_expires_at : null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function toSession(row: SessionRow, currentSessionId: string | undefined): SessionView {
  return {
    id: row.id,
    userId: row.user_id,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    lastVerifiedAt: row.last_verified_at,
    ipAddress: row.ip_address,
    userAgent: row.user_agent,
    impersonatedBy: row.impersonated_by,
    current: row.id === currentSessionId,
  };
}
