/**
 * Resolves the caller of every request once, before any route: from the `session` cookie
 * (browsers) or `Authorization: Bearer` (everyone else). A renewed session is handed back to the
 * client in `set-auth-token` (and in the cookie when the cookie brought it).
 */
import type { RequestHandler } from 'express';
import type { Principal } from './principal.ts';
import type { Sql } from '../db/connection.ts';
import { readCookie, SESSION_COOKIE, serializeCookie } from './cookies.ts';
import { sessionExpiry, validateSessionToken } from './sessions.ts';

export interface Authentication {
  principal: Principal;
  /** Present when the session was renewed (or created) by this request. */
  renewal?: { token: string; expiresAt: Date };
  /** Where the token came from: the cookie is re-sent only to cookie clients. */
  via: 'cookie' | 'bearer';
}

export type Authenticator = (headers: Record<string, string | string[] | undefined>) => Promise<Authentication | null>;

export function presentedToken(headers: Record<string, string | string[] | undefined>): { token: string; via: 'cookie' | 'bearer' } | null {
  const authorization = typeof headers.authorization === 'string' ? headers.authorization : undefined;
  const bearer = authorization && /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1];
  if (bearer) return { token: bearer, via: 'bearer' };
  const cookie = readCookie(typeof headers.cookie === 'string' ? headers.cookie : undefined, SESSION_COOKIE);
  return cookie ? { token: cookie, via: 'cookie' } : null;
}

export function sessionAuthenticator(sql: Sql, now: () => Date): Authenticator {
  return async (headers) => {
    const presented = presentedToken(headers);
    if (!presented) return null;
    const valid = await validateSessionToken(sql, presented.token, now());
    if (!valid) return null;
    const { session, user } = valid;
    return {
      principal: { userId: user.id, email: user.email, role: user.role, sessionId: session.id, impersonatedBy: session.impersonatedBy },
      via: presented.via,
      ...(valid.renewed ? { renewal: { token: presented.token, expiresAt: sessionExpiry(session) } } : {}),
    };
  };
}

/** Sets `set-auth-token` and, for cookie clients, the cookie, for a session created or renewed now. */
export function sendSessionToken(res: Parameters<RequestHandler>[1], token: string, expiresAt: Date, options: { cookie: boolean; secure: boolean; now: Date }): void {
  res.setHeader('set-auth-token', token);
  if (options.cookie) {
    res.append('Set-Cookie', serializeCookie(SESSION_COOKIE, token, { maxAgeSeconds: (expiresAt.getTime() - options.now.getTime()) / 1000, secure: options.secure }));
  }
}

export function clearSessionCookie(res: Parameters<RequestHandler>[1], secure: boolean): void {
  res.append('Set-Cookie', serializeCookie(SESSION_COOKIE, '', { maxAgeSeconds: 0, secure }));
}
