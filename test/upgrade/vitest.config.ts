/**
 * `make test-upgrade` (scripts/test-upgrade.sh): the upgrade runs of test/upgrade/, which the main
 * suite leaves out (vitest.config.ts, scripts/database-tests.ts): each starts a fleet of service
 * processes and loads a large data set for minutes. One file at a time: the two cores carry
 * PostgreSQL, up to seven service processes and the clients already.
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

process.env.NODE_COMPILE_CACHE ??= fileURLToPath(new URL('../../node_modules/.cache/workspace-api/compile/', import.meta.url));

export default defineConfig({
  root: fileURLToPath(new URL('../../', import.meta.url)),
  test: {
    include: ['test/upgrade/**/*.test.ts'],
    fileParallelism: false,
    testTimeout: 600_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // The runs' progress lines as they come, without a header per line.
    disableConsoleIntercept: true,
  },
});
