/** Rows of users and sessions as the identity contract answers them (auth User.yaml, Session.yaml). */
import type { components } from '../../generated/auth-types.ts';
import type { SessionRow, UserRow } from '../auth/sessions.ts';

export type AuthUser = components['schemas']['User'];
export type AuthSession = components['schemas']['Session'];

export function authUser(row: UserRow): AuthUser {
  return {
    id: row.id,
    email: row.email,
    emailVerified: row.email_verified,
    name: row.name,
    image: row.image,
    role: row.role,
    banned: row.banned,
    banReason: row.ban_reason,
    banExpiresAt: row.ban_expires_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function authSession(row: SessionRow, current: boolean): AuthSession {
  return {
    id: row.id,
    userId: row.user_id,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    lastVerifiedAt: row.last_verified_at,
    ipAddress: row.ip_address,
    userAgent: row.user_agent,
    impersonatedBy: row.impersonated_by,
    current,
  };
}
