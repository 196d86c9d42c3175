/**
 * The order of the suite's files on a machine that has not run it yet (a fresh clone, CI): the
 * longest first. Vitest orders files by their last duration, but with no record of one (its cache
 * is in node_modules, which `npm ci` starts over) it runs the larger files first, and some of the
 * longest files are small ones that start processes: job-kind and scaffold then started late and
 * ran on alone at the end (fresh clone: 292 s; the same tree with durations recorded: 259 s).
 * LONG_FILES names them, longest first, as measured on a fresh clone (docs/benchmarks.md); once
 * vitest has durations for every file it orders by them, and this list is not used. A name that
 * no longer exists fails the run, so the list cannot go stale silently.
 */
import { existsSync } from 'node:fs';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Longest first: the wall time of each on a fresh clone's first run, 2026-11-28, in seconds. The
 * two marked `test-pg` are short on the embedded database and among the longest of `make test-pg`,
 * which orders its files by this list too.
 */
export const LONG_FILES = [
  'test/contract/scaffold.test.ts', // 48
  'test/auth/limits-saturated-pool.test.ts', // test-pg: 34
  'test/concurrency/worker-kill.test.ts', // test-pg: 22
  'test/contract/job-kind.test.ts', // 40
  'test/ai-service/parser-agreement.test.ts', // 37
  'test/faults/ai-service-faults.test.ts', // 29
  'test/faults/s3-faults.test.ts', // 27
  'test/cli/first-run.test.ts', // 24
  'test/faults/stopped-database.test.ts', // 20
  'test/ai-service/hostile-documents.test.ts', // 20
  'test/ai-service/queues.test.ts', // 19
  'test/readme/commands.test.ts', // 18
  'test/faults/hung-database.test.ts', // 16
  'test/contract/contract-diff.test.ts', // 16
  'test/contract/portman.test.ts', // 15
  'test/jobs/hostile-documents.test.ts', // 13
  'test/cli/session.test.ts', // 13
];

const missing = LONG_FILES.filter((file) => !existsSync(new URL(`../${file}`, import.meta.url)));
if (missing.length > 0) throw new Error(`test/long-files-first.ts names files that do not exist: ${missing.join(', ')}`);

export class LongFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    if (files.every((spec) => this.ctx.cache.getTestSpecificationResult(spec))) return sorted;
    const rank = (spec: TestSpecification) => LONG_FILES.findIndex((file) => spec.moduleId.endsWith(`/${file}`));
    const long = sorted.filter((spec) => rank(spec) >= 0).sort((a, b) => rank(a) - rank(b));
    return [...long, ...sorted.filter((spec) => rank(spec) < 0)];
  }
}
