/** Identity routes: social sign-in (auth.signInSocial, auth.callback). */
import type { AuthHandlers } from '../identity-route.ts';

export const socialRoutes = {} satisfies AuthHandlers;
