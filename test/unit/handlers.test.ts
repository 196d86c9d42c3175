import { describe, expect, it } from 'vitest';
import { authRoutes } from '../../generated/auth-routes.ts';
import { procedures } from '../../generated/procedures.ts';
import { identityHandlers as authHandlers, procedureHandlers as handlers, streamHandlers } from '../../src/composition/handlers.ts';
import type { CompleteAuthHandlers, CompleteHandlers } from '../../src/context.ts';

// The build tells you (issue 25): the composition root's tables `satisfies` CompleteHandlers and
// CompleteAuthHandlers, so a table without one of the contract's operations does not compile.
// `make lint` type-checks this file: if either line below stopped being an error, tsc would fail
// on the unused @ts-expect-error.
const { 'system.health': _health, ...withoutHealth } = handlers;
// @ts-expect-error system.health has no handler
const procedureTable: CompleteHandlers = withoutHealth;
const { 'auth.signOut': _signOut, ...withoutSignOut } = authHandlers;
// @ts-expect-error auth.signOut has no handler
const identityTable: CompleteAuthHandlers = withoutSignOut;

describe('every route of the contract has its handler', () => {
  it.each(Object.keys(authRoutes))('identity route %s', (name) => {
    expect(authHandlers[name as keyof typeof authHandlers]).toBeTypeOf('function');
  });

  it('no handler is registered for a name the contract does not have', () => {
    for (const name of Object.keys(authHandlers)) expect(Object.keys(authRoutes)).toContain(name);
    for (const name of [...Object.keys(handlers), ...Object.keys(streamHandlers)]) expect(Object.keys(procedures)).toContain(name);
  });

  it('a table without an operation is a type error (see the top of this file), and is one at run time too', () => {
    expect('system.health' in procedureTable).toBe(false);
    expect('auth.signOut' in identityTable).toBe(false);
  });

  // Every procedure is built: none answers 501 any more (issue 10, "Done when").
  it('every procedure has a handler', () => {
    const missing = Object.keys(procedures)
      .filter((name) => !(name in handlers) && !(name in streamHandlers))
      .sort();
    expect(missing).toEqual([]);
  });
});
