/**
 * Preloaded with NODE_OPTIONS=--require into a service process by durability.test.ts: CommonJS,
 * as --require also runs in worker threads, where the embedded database lives (--import does not). When FSYNC_PROBE_LOG names a file, it wraps node:fs's fsyncSync and fdatasyncSync, and its
 * writeSync to PostgreSQL's WAL files, each appending one line to that file once the call has
 * returned: "fsync <path>", "fdatasync <path>", "write <path> <position> <bytes>". The lines are
 * in the order of the system calls (one O_APPEND file shared by every thread), and a line is in
 * the file before the call's caller goes on: what the file holds when an HTTP answer arrives
 * happened before that answer. Paths come from /proc/self/fd (Linux).
 */
// require rather than import: this file runs as CommonJS (--require), and Node strips its types.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const fs = require('node:fs') as typeof import('node:fs');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { syncBuiltinESMExports } = require('node:module') as typeof import('node:module');

const logPath = process.env.FSYNC_PROBE_LOG;
if (logPath) {
  const { writeSync, fsyncSync, fdatasyncSync, readlinkSync, openSync } = fs;
  const logFd = openSync(logPath, 'a');
  const pathOf = (fd: number): string => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      return `fd:${fd}`;
    }
  };
  const log = (line: string) => writeSync(logFd, `${line}\n`);
  fs.fsyncSync = (fd: number) => {
    fsyncSync(fd);
    log(`fsync ${pathOf(fd)}`);
  };
  fs.fdatasyncSync = (fd: number) => {
    fdatasyncSync(fd);
    log(`fdatasync ${pathOf(fd)}`);
  };
  const wrapped = (fd: number, buffer: NodeJS.ArrayBufferView | string, ...rest: unknown[]): number => {
    const written = (writeSync as (...args: unknown[]) => number)(fd, buffer, ...rest);
    if (fd !== logFd && typeof buffer !== 'string') {
      const path = pathOf(fd);
      // writeSync(fd, buffer, offset, length, position), as Emscripten's NODEFS calls it.
      if (path.includes('/pg_wal/')) log(`write ${path} ${String(rest[2])} ${written}`);
    }
    return written;
  };
  fs.writeSync = wrapped;
  // ES modules' named imports of node:fs (PGlite's patched nodefs.js) see the wrappers too.
  syncBuiltinESMExports();
}
