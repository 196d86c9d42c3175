/** system.health and system.authConfig; system.flags arrives with the feature-flag tables. */
import type { Handlers } from '../context.ts';
import { version } from '../version.ts';

export const systemProcedures = {
  'system.health': () => ({ status: 'ok', version, time: new Date() }),
  'system.authConfig': (_input, ctx) => ({
    socialProviders: [],
    requireEmailVerification: ctx.services.config.requireEmailVerification,
  }),
} satisfies Handlers;
