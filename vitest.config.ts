import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // One migrated template database per run, cloned per test file (test/support/database.ts).
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Three files at a time on two cores: many files mostly wait (deadlines, a hung database or
    // bucket, a child process starting), so a third one keeps the cores busy meanwhile.
    maxWorkers: 3,
  },
});
