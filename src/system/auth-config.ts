import type { Config } from '../config.ts';

/** The sign-in settings system.authConfig answers (and admin.system.status repeats). */
export function authConfig(config: Config) {
  return {
    // A provider is enabled when its client id and secret are configured (src/config.ts).
    socialProviders: (['github', 'google'] as const).filter((provider) => config[provider] !== null),
    requireEmailVerification: config.requireEmailVerification,
  };
}
