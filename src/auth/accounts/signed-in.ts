/** The caller of a route the contract marks `x-access: session`. */
import type { Principal } from '../../context.ts';
import { ApiError } from '../../http/errors.ts';
import type { AuthContext } from '../identity-route.ts';

/** The identity router already answered 401 without a session; this narrows the type (and guards a misdeclared route). */
export function signedIn(ctx: AuthContext): Principal {
  if (!ctx.principal) throw new ApiError('UNAUTHORIZED');
  return ctx.principal;
}
