import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';
import { LongFilesFirst } from './test/long-files-first.ts';

// V8's code cache on disk for the workers' modules and for the threads they start (each document
// is parsed in a thread of its own, which loads its modules again): the service's own cache
// (src/main.ts). Set before the workers start, so that Node enables it in them from the first module.
process.env.NODE_COMPILE_CACHE ??= fileURLToPath(new URL('node_modules/.cache/workspace-api/compile/', import.meta.url));

export default defineConfig({
  test: {
    // One migrated template database per run, copied per test file (test/support/database.ts).
    globalSetup: ['test/global-setup.ts'],
    // The upgrade runs (make test-upgrade) start fleets of processes on a server of their own for
    // minutes: their own config, test/upgrade/vitest.config.ts. .tmp/ holds the previous release's
    // tree they unpack, whose own tests are not ours to run.
    exclude: [...configDefaults.exclude, 'test/upgrade/**', '.tmp/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Four files at a time on two cores: many files mostly wait (deadlines, a hung database or
    // bucket, a child process starting), so the others keep the cores busy meanwhile. With three,
    // a third of the cores' time was idle during `make test-pg` (179 s; 161 with four) and `make
    // test` took 195 s (188 with four): docs/benchmarks.md.
    maxWorkers: 4,
    // Each worker process runs file after file instead of one process per file: a new process
    // loads the app's modules again (about 0.7 s of CPU per file). The suite took 29% less CPU
    // (docs/benchmarks.md, "The test suite's time"). What a file starts (servers, databases,
    // threads) it closes in its own afterAll; nothing here mocks modules.
    isolate: false,
    // V8's baseline WebAssembly compiler only: each embedded database (PGlite, 10 MB of wasm)
    // otherwise spends 1-2 s of CPU per test file optimizing functions in background threads
    // for a database that lives for seconds. Tests that store and search hundreds of chunks
    // were no slower. The service itself keeps V8's defaults.
    execArgv: ['--liftoff-only'],
    // The longest files first when vitest has no durations yet (test/long-files-first.ts).
    sequence: { sequencer: LongFilesFirst },
  },
});
