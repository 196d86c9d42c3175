/** system.health and system.authConfig; system.flags arrives with the feature-flag tables. */
import type { Handlers } from '../context.ts';
import { version } from '../version.ts';

export const systemProcedures = {
  'system.health': () => ({ status: 'ok', version, time: new Date() }),
  'system.authConfig': (_input, ctx) => {
    const { config } = ctx.services;
    return {
      // A provider is enabled when its client id and secret are configured (src/config.ts).
      socialProviders: (['github', 'google'] as const).filter((provider) => config[provider] !== null),
      requireEmailVerification: config.requireEmailVerification,
    };
  },
} satisfies Handlers;
