/** Identity routes: organizations, members and invitations (auth.organization.*). */
import type { AuthHandlers } from '../auth/identity-route.ts';

export const organizationRoutes = {} satisfies AuthHandlers;
