// PGlite does not lock its data directory: two processes can open the same one
// and both write to it (tried: both succeed, each with its own view of the
// data), which corrupts it. A pid file next to the data directory makes the
// second opener fail with a clear message instead.
import { open, readFile, unlink } from 'node:fs/promises';

export interface DataDirLock {
  release(): Promise<void>;
}

// Paths this process holds: its own pid in a lock file means "in use" only if
// it is in here; otherwise the file is left from an earlier run that got the
// same pid (usual in containers, where the service is often pid 1).
const heldHere = new Set<string>();

export async function lockDataDir(lockPath: string): Promise<DataDirLock> {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(lockPath, 'wx');
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      heldHere.add(lockPath);
      return {
        async release() {
          if (!heldHere.delete(lockPath)) return;
          await unlink(lockPath).catch(() => undefined);
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = Number.parseInt(await readFile(lockPath, 'utf8').catch(() => ''), 10);
    const inUse = holder === process.pid ? heldHere.has(lockPath) : Number.isInteger(holder) && isRunning(holder);
    if (inUse) {
      throw new Error(
        `The embedded database next to ${lockPath} is in use by process ${holder}. ` +
          'Stop that process, or set DATABASE_URL so processes share one PostgreSQL server. ' +
          `If no such process uses it, delete ${lockPath}.`,
      );
    }
    // Left behind by a process that died: take it over. Two processes doing
    // this in the same instant could both win; that needs a crash followed
    // by a double start within milliseconds.
    await unlink(lockPath).catch(() => undefined);
  }
  throw new Error(`Could not lock the embedded database (${lockPath})`);
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0); // signal 0 only checks that the process exists
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'; // exists, owned by another user
  }
}
