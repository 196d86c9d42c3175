/** Identity routes: teams and team members. */
import type { AuthHandlers } from '../auth/identity-route.ts';

export const teamRoutes = {} satisfies AuthHandlers;
