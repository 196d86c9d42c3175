/** Identity routes: platform admin user operations (auth.admin.*). */
import type { AuthHandlers } from '../auth/identity-route.ts';

export const adminUserRoutes = {} satisfies AuthHandlers;
