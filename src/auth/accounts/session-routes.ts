/** Identity routes: sign-up, sign-in, sign-out and the session routes. */
import type { AuthHandlers } from '../identity-route.ts';

export const sessionRoutes = {} satisfies AuthHandlers;
