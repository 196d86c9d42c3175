/**
 * Breaking changes never ship by accident (docs/contract-changes.md). Compares each published
 * bundle (generated/openapi.json, generated/auth-openapi.json: what codegen writes and the service
 * serves) with its released snapshot in openapi/released/, through api-smart-diff
 * (scripts/contract-diff/compare.ts).
 *
 *   node scripts/contract-diff.ts            `make contract-diff`: rewrites the Unreleased section of
 *                                            docs/contract-changelog.md; exit 1 on a breaking change
 *                                            unless info.version moved by a major step
 *   node scripts/contract-diff.ts --check    CI: writes nothing; exit 1 on the same, or when the
 *                                            committed changelog is not what the diff says
 *   node scripts/contract-diff.ts --release  `make contract-release`: records the Unreleased changes
 *                                            as a release of the current info.version, copies the
 *                                            bundles into openapi/released/
 *   --released DIR, --current DIR, --changelog FILE   other places than openapi/released/, generated/
 *                                            and docs/contract-changelog.md
 */
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { compareContract, type ContractDiff } from './contract-diff/compare.ts';
import { recordRelease, writeUnreleased } from './contract-diff/changelog.ts';
import { judge, parseVersion } from './contract-diff/verdict.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const BUNDLES = ['openapi.json', 'auth-openapi.json'];

// --released, --current and --changelog point elsewhere than the repository (the test runs on copies).
const { values } = parseArgs({
  options: {
    check: { type: 'boolean', default: false },
    release: { type: 'boolean', default: false },
    released: { type: 'string', default: join(root, 'openapi', 'released') },
    current: { type: 'string', default: join(root, 'generated') },
    changelog: { type: 'string', default: join(root, 'docs', 'contract-changelog.md') },
  },
});
const released = (name: string): string => join(values.released, name);
const current = (name: string): string => join(values.current, name);
const CHANGELOG = values.changelog;

const readJson = (path: string): unknown => JSON.parse(readFileSync(path, 'utf8'));

function diffAll(): ContractDiff[] {
  return BUNDLES.map((name) => {
    if (!existsSync(released(name))) throw new Error(`${released(name)} is missing: openapi/released/README.md says how a release writes it.`);
    return compareContract(name, readJson(released(name)), readJson(current(name)));
  });
}

function main(): number {
  const diffs = diffAll();
  const verdict = judge(diffs);
  console.log(verdict.report);
  const changelog = existsSync(CHANGELOG) ? readFileSync(CHANGELOG, 'utf8') : undefined;
  if (!verdict.ok) {
    console.error('contract-diff: breaking change(s) without a major version step (listed above).');
    return 1;
  }
  if (values.release) return release(diffs, changelog);
  const fresh = writeUnreleased(changelog, diffs);
  if (fresh === changelog) {
    console.log('contract-diff: no breaking change without a major step; docs/contract-changelog.md is up to date.');
    return 0;
  }
  if (values.check) {
    console.error('contract-diff: docs/contract-changelog.md is stale: run `make contract-diff` and commit it.');
    return 1;
  }
  writeFileSync(CHANGELOG, fresh);
  console.log('contract-diff: no breaking change without a major step; wrote docs/contract-changelog.md.');
  return 0;
}

function release(diffs: ContractDiff[], changelog: string | undefined): number {
  if (diffs.every((diff) => diff.changes.length === 0)) {
    console.log('contract-release: the bundles equal the released snapshot; nothing to release.');
    return 0;
  }
  for (const diff of diffs) {
    const before = parseVersion(diff.releasedVersion);
    const after = parseVersion(diff.currentVersion);
    const later = before && after && [after.major - before.major, after.minor - before.minor, after.patch - before.patch].find((step) => step !== 0);
    if (!later || later < 0) {
      console.error(
        `contract-release: ${diff.name} is at ${diff.currentVersion}, which is not later than the released ${diff.releasedVersion}: ` +
          'set package.json "version" (major for breaking changes, minor for additions, patch for the rest), run make codegen, then release.',
      );
      return 1;
    }
  }
  const version = diffs[0]!.currentVersion;
  let text = recordRelease(changelog, diffs, version, new Date().toISOString().slice(0, 10));
  for (const name of BUNDLES) copyFileSync(current(name), released(name));
  text = writeUnreleased(text, diffAll());
  writeFileSync(CHANGELOG, text);
  console.log(`contract-release: ${version} recorded in docs/contract-changelog.md; openapi/released/ now holds its bundles. Commit both.`);
  return 0;
}

process.exitCode = main();
