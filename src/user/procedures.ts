/** user.me: the user of the caller's session, read fresh so a role change shows at once. */
import type { Handlers } from '../context.ts';
import { ApiError } from '../contract/errors.ts';
import { findUser } from '../auth/users-store.ts';

export const userProcedures = {
  'user.me': async (_input, ctx) => {
    if (!ctx.principal) throw new ApiError('UNAUTHORIZED');
    const user = await findUser(ctx.services.db.sql, ctx.principal.userId);
    // Deleted between authentication and this read: the session went with the user.
    if (!user) throw new ApiError('UNAUTHORIZED');
    return { id: user.id, email: user.email, name: user.name, image: user.image, role: user.role, createdAt: user.createdAt };
  },
} satisfies Handlers;
