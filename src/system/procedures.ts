/** system.health, system.authConfig and system.flags. */
import type { Handlers } from '../context.ts';
import { flagValues } from '../flags/store.ts';
import type { Config } from '../config.ts';
import { version } from '../version.ts';

/** The sign-in settings system.authConfig answers (and admin.system.status repeats). */
export function authConfig(config: Config) {
  return {
    // A provider is enabled when its client id and secret are configured (src/config.ts).
    socialProviders: (['github', 'google'] as const).filter((provider) => config[provider] !== null),
    requireEmailVerification: config.requireEmailVerification,
  };
}

export const systemProcedures = {
  'system.health': () => ({ status: 'ok', version, time: new Date() }),
  'system.authConfig': (_input, ctx) => authConfig(ctx.services.config),
  // With organizationId the binding layer has checked membership (x-access tenant: organizationId, optional).
  'system.flags': (input, ctx) => flagValues(ctx.services.db.sql, input.organizationId ?? null),
} satisfies Handlers;
