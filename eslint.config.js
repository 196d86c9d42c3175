// typescript-eslint with type information (`make lint`, docs/architecture.md "Lint and format"):
// the type-checked rules find what tsc lets through, first of all promises nobody waits for and
// promises handed to callers that ignore them. A rule is turned off only with its reason beside it.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';
import declaredErrorCodes from './eslint-rules/declared-error-codes.ts';

// Walk OpenAPI documents and YAML as plain JSON (`type Json = Record<string, any>`): the documents'
// shape is checked by redocly (`make lint`) and what is generated from them by tsc and the tests.
const untypedJsonWalkers = ['codegen/**', 'scripts/scaffold.ts'];

/** The rules about `any`, off where values are untyped by nature (below: those walkers, and tests). */
const untypedValuesAllowed = {
  '@typescript-eslint/no-explicit-any': 'off',
  '@typescript-eslint/no-unsafe-argument': 'off',
  '@typescript-eslint/no-unsafe-assignment': 'off',
  '@typescript-eslint/no-unsafe-call': 'off',
  '@typescript-eslint/no-unsafe-member-access': 'off',
  '@typescript-eslint/no-unsafe-return': 'off',
};

export default defineConfig(
  {
    // Written by codegen (generated/ and the client package's generated modules) or by a build
    // (dist/): their generator is what gets fixed. openapi/, sql/ and docs/ hold no code.
    ignores: [
      'generated/**',
      'clients/typescript/dist/**',
      'clients/typescript/src/client.ts',
      'clients/typescript/src/types.ts',
      'clients/typescript/src/enums.ts',
      'openapi/**',
      'sql/**',
      'docs/**',
      'patches/**',
      '.data/**',
      '.tmp/**',
      'coverage/**',
    ],
  },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        // Each file is checked with the tsconfig.json that covers it (the root one, or the client
        // package's); the plain JavaScript files outside every tsconfig use the default project.
        projectService: {
          allowDefaultProject: ['eslint.config.js', 'clients/typescript/scripts/*.mjs'],
        },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      // A leading underscore marks a binding left unused on purpose: a key dropped from a
      // destructured object (`{ secret: _secret, ...rest }`), a parameter a signature requires.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_' }],
      // Off: an `async` implementation of a Promise-returning interface (a store, a driver, a
      // limiter kept in memory) need not await anything, and `async` is what turns its throws into
      // rejections, as its callers expect. Promises actually left unawaited are no-floating-promises'.
      '@typescript-eslint/require-await': 'off',
      // Off: services, handles and stores here are plain objects of closures, not classes (`stop`,
      // `listen`, `now` use no `this`), and their interfaces are written with method shorthand, so
      // every destructuring of one would be reported.
      '@typescript-eslint/unbound-method': 'off',
      // `{}` is the identity of `&` in the type-level mapping of the contract (Present, ParamsOf,
      // Simplify): "no keys" there, never "any value". Empty interfaces are still reported.
      '@typescript-eslint/no-empty-object-type': ['error', { allowObjectTypes: 'always' }],
      // Off: every control character in a regular expression here is deliberate: such patterns
      // strip or refuse control characters in untrusted input (filenames, redirects, extracted text).
      'no-control-regex': 'off',
      // Handing on a value caught or received from elsewhere (a worker's error, an AbortSignal's
      // `reason`, typed any) is not inventing a non-Error reason; a literal string or object is
      // still reported.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingAny: true, allowThrowingUnknown: true }],
      // URL and URLSearchParams print as the address and the query string: meant in a template.
      // Their types come from @types/node's `url` module here, which the rule's default
      // (the same names, from TypeScript's lib) does not match.
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        {
          allow: [
            { from: 'lib', name: ['Error', 'URL', 'URLSearchParams'] },
            { from: 'package', package: 'url', name: ['URL', 'URLSearchParams'] },
          ],
        },
      ],
      '@typescript-eslint/only-throw-error': ['error', { allowThrowingAny: true, allowThrowingUnknown: true }],
    },
  },
  {
    // A handler throws only the error codes its operation declares (eslint-rules/declared-error-codes.ts).
    files: ['src/**/*.ts'],
    plugins: { local: { rules: { 'declared-error-codes': declaredErrorCodes } } },
    rules: { 'local/declared-error-codes': 'error' },
  },
  {
    files: untypedJsonWalkers,
    rules: untypedValuesAllowed,
  },
  {
    // Tests read untyped JSON answers (`await response.json()` is `any`) and send ill-typed input
    // on purpose; their assertions are the check on those values, and typing each body by hand
    // would only restate the contract the assertions test. The other type-checked rules stay on.
    files: ['test/**'],
    rules: untypedValuesAllowed,
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { globals: { URL: 'readonly', process: 'readonly', console: 'readonly' } },
  },
);
