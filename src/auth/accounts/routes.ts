/** Identity routes: password change, reset and email verification (auth.changePassword ... auth.verifyEmail). */
import type { AuthHandlers } from '../identity-route.ts';

export const accountRoutes = {} satisfies AuthHandlers;
