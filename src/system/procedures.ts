/** system.health, system.authConfig and system.flags. */
import type { Handlers } from '../context.ts';
import { flagValues } from '../flags/store.ts';
import { authConfig } from './auth-config.ts';
import { version } from '../version.ts';

export const systemProcedures = {
  'system.health': () => ({ status: 'ok', version, time: new Date() }),
  'system.authConfig': (_input, ctx) => authConfig(ctx.services.config),
  // With organizationId the binding layer has checked membership (x-access tenant: organizationId, optional).
  'system.flags': (input, ctx) => flagValues(ctx.services.db.sql, input.organizationId ?? null),
} satisfies Handlers;
