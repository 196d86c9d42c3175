/**
 * What an identity route handler is: `(input, ctx) => AuthAnswer`. Like a procedure it knows
 * nothing about Express; unlike one it may hand out or clear a session, set a short-lived cookie
 * (OAuth state) or redirect, which the identity router turns into headers.
 */
import type { AuthRouteInput, AuthRouteName, AuthRouteOutput, authRoutes } from '../../generated/auth-routes.ts';
import type { Context, RowOf } from '../context.ts';
import type { Principal } from './principal.ts';
import { ApiError } from '../contract/errors.ts';

/** What identity routes get in their context besides a procedure's. */
export interface AuthExtra {
  userAgent: string | null;
  /** A request cookie by name (OAuth state and verifier cookies). */
  cookie(name: string): string | undefined;
  /**
   * The request body exactly as it arrived (UTF-8 text), for what signs the bytes rather than
   * the parsed JSON (the Stripe webhook); undefined without a body.
   */
  rawBody(): string | undefined;
  /** A request header the contract declares (headers are not part of the input), e.g. stripe-signature. */
  header(name: string): string | undefined;
}

export type AuthContext<Row = undefined> = Context<Row> & AuthExtra;

export interface AuthAnswer<T> {
  body?: T;
  /** Answer 302 to this URL instead of a body. */
  redirect?: string;
  /** A session created now: sent as set-auth-token and as the session cookie. */
  session?: { token: string; expiresAt: Date };
  /** Remove the session cookie (sign-out, revocation of the current session). */
  clearSession?: boolean;
  /** Other cookies to set; maxAgeSeconds 0 removes one. */
  cookies?: { name: string; value: string; maxAgeSeconds: number; path?: string }[];
}

export type AuthHandler<N extends AuthRouteName> = (
  input: AuthRouteInput<N>,
  ctx: AuthContext<RowOf<(typeof authRoutes)[N]['access']>>,
) => Promise<AuthAnswer<AuthRouteOutput<N>>>;

export type AuthHandlers = { [N in AuthRouteName]?: AuthHandler<N> };

/** The caller of a route that needs a session: the router already answered 401 without one, so this narrows the type. */
export function signedIn(ctx: Context<unknown>): Principal {
  if (!ctx.principal) throw new ApiError('UNAUTHORIZED');
  return ctx.principal;
}
