import { describe, expect, it } from 'vitest';
import { authRoutes } from '../../generated/auth-routes.ts';
import { procedures } from '../../generated/procedures.ts';
import { identityHandlers as authHandlers, procedureHandlers as handlers, streamHandlers } from '../../src/composition/handlers.ts';

describe('every route of the contract has its handler', () => {
  it.each(Object.keys(authRoutes))('identity route %s', (name) => {
    expect(authHandlers[name as keyof typeof authHandlers]).toBeTypeOf('function');
  });

  it('no handler is registered for a name the contract does not have', () => {
    for (const name of Object.keys(authHandlers)) expect(Object.keys(authRoutes)).toContain(name);
    for (const name of [...Object.keys(handlers), ...Object.keys(streamHandlers)]) expect(Object.keys(procedures)).toContain(name);
  });

  // Every procedure is built: none answers 501 any more (issue 10, "Done when").
  it('every procedure has a handler', () => {
    const missing = Object.keys(procedures).filter((name) => !(name in handlers) && !(name in streamHandlers)).sort();
    expect(missing).toEqual([]);
  });
});
