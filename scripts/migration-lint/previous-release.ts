/**
 * The previous release, as releases/previous.json records it: `{ commit, date, lastMigration }`.
 * Its migrations (numbered up to lastMigration) are frozen: they ran in production and are read,
 * never judged. Its source is what still runs while the next release deploys (and after a
 * rollback), so a table or column its src/ mentions must not be dropped or renamed yet.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

export interface PreviousRelease {
  commit: string;
  lastMigration: string;
  date?: string;
}

export function readPreviousRelease(path: string): PreviousRelease {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`${path} could not be read (${error instanceof Error ? error.message : String(error)}): it records the previous release, { "commit", "date", "lastMigration" }`, { cause: error });
  }
  const { commit, lastMigration, date } = (json ?? {}) as Record<string, unknown>;
  if (typeof commit !== 'string' || typeof lastMigration !== 'string' || !/^\d{4}$/.test(lastMigration)) {
    throw new Error(`${path} must hold { "commit": "<sha>", "lastMigration": "NNNN" }, the previous release's commit and its last migration's number`);
  }
  return { commit, lastMigration, ...(typeof date === 'string' ? { date } : {}) };
}

/** Where the previous release's src/ mentions a name, read with git from the release's commit. */
export interface ReleaseSource {
  commit: string;
  /**
   * The files of src/ that hold `name` as a whole word (case-insensitive, as SQL names are), or
   * undefined when git cannot read the commit (a shallow clone, an unknown commit): then be strict.
   */
  filesUsing(name: string): string[] | undefined;
}

export function openReleaseSource(repo: string, commit: string): ReleaseSource {
  // A commit is hex: anything else (an option, a range) is never handed to git.
  const readable = /^[0-9a-f]{7,40}$/i.test(commit) && git(repo, ['cat-file', '-e', `${commit}^{commit}`]).status === 0;
  const cache = new Map<string, string[] | undefined>();
  return {
    commit,
    filesUsing(name) {
      if (!readable) return undefined;
      if (!cache.has(name)) {
        const result = git(repo, ['grep', '-l', '-w', '-i', '-F', '-e', name, commit, '--', 'src']);
        // 1 is "no match"; anything else (a blob missing from a partial clone) is unreadable.
        const files = result.status === 0 || result.status === 1 ? result.stdout.split('\n').filter(Boolean) : undefined;
        cache.set(
          name,
          files?.map((line) => line.slice(line.indexOf(':') + 1)),
        );
      }
      return cache.get(name);
    },
  };
}

function git(repo: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  // GIT_NO_LAZY_FETCH: a partial clone must not go to the network for the old blobs.
  const result = spawnSync('git', ['-C', repo, ...args], { encoding: 'utf8', env: { ...process.env, GIT_NO_LAZY_FETCH: '1' }, maxBuffer: 16 * 1024 * 1024 });
  return { status: result.status, stdout: result.stdout ?? '', stderr: result.stderr ?? '' };
}
