/**
 * `make lint` fails when a handler can throw an error code its contract does not declare
 * (eslint-rules/declared-error-codes.ts). The rule runs for real, with type information, over the
 * fixture modules in test/lint/fixtures/: the handler's text is each case's, the helpers it
 * imports are files on disk, so calls across modules are resolved as in src/.
 */
import path from 'node:path';
import { ESLint, RuleTester } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';
import rule from '../../eslint-rules/declared-error-codes.ts';
import { procedures } from '../../generated/procedures.ts';
import { authRoutes } from '../../generated/auth-routes.ts';

RuleTester.describe = describe;
RuleTester.it = it;
RuleTester.itOnly = it.only;

const fixtures = path.join(import.meta.dirname, 'fixtures');
const filename = path.join(fixtures, 'handlers.ts');
/** Where a finding names a fixture's throw site: relative to the directory eslint runs in. */
const site = (file: string, line: number) => `${path.relative(process.cwd(), path.join(fixtures, file))}:${line}`;
const errors = "import { ApiError, badRequest } from '../../../src/contract/errors.ts';\n";

const tester = new RuleTester({
  languageOptions: {
    parser: tseslint.parser,
    // Each case lints its own text as handlers.ts. With CI=true typescript-eslint would otherwise
    // build one program for the run from the file on disk ("single run") and see none of them.
    parserOptions: { project: path.join(fixtures, 'tsconfig.json'), tsconfigRootDir: fixtures, disallowAutomaticSingleRunInference: true },
  },
});

// The cases lean on what the contract declares: a public health check has no conflict to report,
// a sign-out nothing to find. Stated here, so a contract change breaks this line, not a case.
it('uses operations whose contracts declare BAD_REQUEST but neither CONFLICT nor NOT_FOUND', () => {
  for (const declared of [procedures['system.health'].errors, authRoutes['auth.signOut'].errors] as readonly (readonly string[])[]) {
    expect(declared).toContain('BAD_REQUEST');
    expect(declared).not.toContain('CONFLICT');
    expect(declared).not.toContain('NOT_FOUND');
  }
});

// `make lint` runs eslint with the repository's config: the rule must be on, as an error, for the handlers.
it('is an error in the config make lint uses, for every module of src/', async () => {
  const eslint = new ESLint({ cwd: path.resolve(import.meta.dirname, '../..') });
  for (const file of ['src/workspaces/procedures.ts', 'src/admin/user-routes.ts']) {
    const config = (await eslint.calculateConfigForFile(file)) as { rules: Record<string, unknown>; plugins: Record<string, ESLint.Plugin> };
    expect(config.rules['local/declared-error-codes'], file).toEqual([2]);
    // The same module, loaded by eslint's own import rather than this file's.
    expect(config.plugins.local?.rules?.['declared-error-codes']?.meta, file).toEqual(rule.meta);
  }
});

tester.run('declared-error-codes', rule, {
  valid: [
    {
      name: 'a declared code thrown in the handler',
      filename,
      code: `${errors}export const t = { 'system.health': () => { throw new ApiError('BAD_REQUEST', { data: { issues: [] } }); } };`,
    },
    {
      name: 'a declared code built by a factory',
      filename,
      code: `${errors}export const t = { 'system.health': () => { throw badRequest([]); } };`,
    },
    {
      name: 'a declared code thrown by a helper in another module, through a cycle of calls',
      filename,
      code: `${errors}import { pingPong } from './helpers.ts';\nexport const t = { 'system.health': () => { pingPong(3); return { status: 'ok' }; } };`,
    },
    {
      name: 'a key that is no operation of the contract',
      filename,
      code: `${errors}export const t = { 'not.an.operation': () => { throw new ApiError('CONFLICT'); } };`,
    },
    {
      name: 'what is thrown is no ApiError (the generic 500)',
      filename,
      code: `export const t = { 'system.health': () => { throw new Error('broken'); } };`,
    },
  ],
  invalid: [
    {
      name: 'an undeclared code thrown in the handler, reported where it is thrown',
      filename,
      code: `${errors}export const t = {\n  'system.health': () => {\n    throw new ApiError('CONFLICT');\n  },\n};`,
      errors: [{ messageId: 'undeclared', line: 4, data: { operation: 'system.health', code: 'CONFLICT', declared: procedures['system.health'].errors.join(', ') } }],
    },
    {
      name: 'an undeclared code thrown by a helper in another module',
      filename,
      code: `${errors}import { assertVacant } from './helpers.ts';\nexport const t = { 'system.health': () => { assertVacant(true); return { status: 'ok' }; } };`,
      errors: [
        {
          messageId: 'undeclaredVia',
          line: 3,
          data: { operation: 'system.health', code: 'CONFLICT', chain: 'assertVacant', site: site('helpers.ts', 9), declared: procedures['system.health'].errors.join(', ') },
        },
      ],
    },
    {
      name: "a helper's helper, two modules away, named in the chain",
      filename,
      code: `${errors}import { assertVacantDeeper } from './helpers.ts';\nexport const t = { 'system.health': async () => { assertVacantDeeper(true); return { status: 'ok' }; } };`,
      errors: [
        {
          messageId: 'undeclaredVia',
          data: { operation: 'system.health', code: 'CONFLICT', chain: 'assertVacantDeeper → throwsConflictDeeper', site: site('deeper.ts', 5), declared: procedures['system.health'].errors.join(', ') },
        },
      ],
    },
    {
      name: 'a factory in another module whose return type is ApiError<NOT_FOUND>',
      filename,
      code: `${errors}import { gone } from './helpers.ts';\nexport const t = { 'system.health': () => { throw gone(); } };`,
      errors: [{ messageId: 'undeclared', data: { operation: 'system.health', code: 'NOT_FOUND', declared: procedures['system.health'].errors.join(', ') } }],
    },
    {
      name: 'a local factory whose code is inferred',
      filename,
      code: `${errors}const taken = () => new ApiError('CONFLICT');\nexport const t = { 'system.health': () => { throw taken(); } };`,
      errors: [{ messageId: 'undeclared', data: { operation: 'system.health', code: 'CONFLICT', declared: procedures['system.health'].errors.join(', ') } }],
    },
    {
      name: 'an undeclared code in a callback inside the handler, and in a helper handed on as one',
      filename,
      code: `${errors}import { assertVacant } from './helpers.ts';\nexport const t = { 'system.health': () => { [true].forEach(assertVacant); [0].forEach(() => { throw new ApiError('NOT_FOUND'); }); return { status: 'ok' }; } };`,
      errors: [
        { messageId: 'undeclaredVia', data: { operation: 'system.health', code: 'CONFLICT', chain: 'assertVacant', site: site('helpers.ts', 9), declared: procedures['system.health'].errors.join(', ') } },
        { messageId: 'undeclared', data: { operation: 'system.health', code: 'NOT_FOUND', declared: procedures['system.health'].errors.join(', ') } },
      ],
    },
    {
      name: 'a handler written apart from its table',
      filename,
      code: `${errors}import { healthHandler } from './helpers.ts';\nexport const t = { 'system.health': healthHandler };`,
      errors: [
        {
          messageId: 'undeclaredVia',
          data: { operation: 'system.health', code: 'CONFLICT', chain: 'healthHandler → assertVacant', site: site('helpers.ts', 9), declared: procedures['system.health'].errors.join(', ') },
        },
      ],
    },
    {
      name: 'an identity route written as a method, against its own declared codes',
      filename,
      code: `${errors}export const t = { async 'auth.signOut'() { throw new ApiError('NOT_FOUND'); } };`,
      errors: [{ messageId: 'undeclared', data: { operation: 'auth.signOut', code: 'NOT_FOUND', declared: authRoutes['auth.signOut'].errors.join(', ') } }],
    },
    {
      name: 'an ApiError whose type does not say its code',
      filename,
      code: `${errors}import { vague } from './helpers.ts';\nexport const t = { 'system.health': () => { throw vague(); } };`,
      errors: [{ messageId: 'unknownCode', data: { operation: 'system.health', site: site('handlers.ts', 3), via: '' } }],
    },
  ],
});
