// The embedded database used when no DATABASE_URL is set (single machine, tests): PGlite,
// PostgreSQL compiled to WebAssembly, served over the PostgreSQL wire protocol on a loopback port,
// so the rest of the service talks to it through the same driver as to a real server.
//
// PGlite and its server run in a worker thread (embedded-thread.ts). PGlite executes a statement
// synchronously on the thread that owns it: on the API's thread, the job worker storing thousands
// of chunks stopped every request meanwhile (p99 about 100x idle, measured). Here the API's thread
// only speaks the wire protocol; bench/embedded-thread.ts measures both. This module keeps what
// must stay on the main thread: the data directory's lock (data-dir-lock.ts is per process) and
// the `.creating` marker.
//
// A commit is on the disk before it is acknowledged (fsync on, see embedded-thread.ts): it survives
// a power cut, not only the process being killed (docs/deploying.md, "What the embedded database
// guarantees"; test/db/durability.test.ts).
import { mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { syncPath } from '../storage/sync-path.ts';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { lockDataDir } from './data-dir-lock.ts';
import type { ThreadMessage, ThreadRequest, ThreadSetup } from './embedded-protocol.ts';

export interface EmbeddedDatabaseOptions {
  /** The service's data directory; PostgreSQL's files go in `<dataDir>/pg`. */
  dataDir: string;
  /** A tarball from `dumpDataDir()` to start from (tests clone a migrated template); `<dataDir>/pg` must not hold a database yet. */
  loadDataDir?: Blob;
  /** Called once the thread has been started, before it has opened the database. */
  onThreadStarted?: () => void;
  /**
   * PostgreSQL's fsync (default true): a commit is on the disk before it is acknowledged. False
   * leaves it in the page cache (PGlite's own default): it survives the process being killed, not
   * a power cut or a kernel crash. Benchmarks compare both (bench/durable-commits.ts).
   */
  fsync?: boolean;
}

export interface EmbeddedDatabase {
  /** postgres:// URL of the loopback server. It accepts one connection at a time. */
  url: string;
  /** Stops accepting connections (end your clients first), then returns the data directory as an uncompressed tarball. Only close() may follow. */
  dumpDataDir(): Promise<Blob>;
  /** Stops the server and PGlite. Safe to call more than once; resolves even when the thread has died. */
  close(): Promise<void>;
}

/** What startEmbeddedDatabase answers: the database, with one more method for tests. */
export interface EmbeddedDatabaseThread extends EmbeddedDatabase {
  /** Makes the database's thread die of an uncaught error at its next turn, as a bug or running out of memory would. */
  crashThread(): void;
}

export function embeddedPgDataPath(dataDir: string): string {
  return join(dataDir, 'pg');
}

// Present while a start creates `<dataDir>/pg` (initdb, or unpacking a template). A start that
// finds it was cut off halfway (killed, power loss): what is there is not a database, and it is
// created again instead of failing on every later start.
function creatingMarkerPath(dataDir: string): string {
  return `${embeddedPgDataPath(dataDir)}.creating`;
}

/**
 * True when `<dataDir>/pg` holds a database (so `loadDataDir` must not be passed), false when a
 * start would create one: no files there, or only what a cut-off creation left.
 */
export async function embeddedDatabaseExists(dataDir: string): Promise<boolean> {
  if (await exists(creatingMarkerPath(dataDir))) return false;
  const entries = await readdir(embeddedPgDataPath(dataDir)).catch(() => []);
  return entries.length > 0;
}

export async function startEmbeddedDatabase(options: EmbeddedDatabaseOptions): Promise<EmbeddedDatabaseThread> {
  const pgDataPath = embeddedPgDataPath(options.dataDir);
  await mkdir(options.dataDir, { recursive: true });
  const lock = await lockDataDir(`${pgDataPath}.lock`);

  let thread: DatabaseThread | undefined;
  try {
    const marker = creatingMarkerPath(options.dataDir);
    const creating = !(await embeddedDatabaseExists(options.dataDir));
    const fsync = options.fsync ?? true;
    if (creating) {
      await rm(pgDataPath, { recursive: true, force: true });
      await writeFile(marker, `${process.pid}\n`);
      if (fsync) await syncPath(options.dataDir);
    }
    thread = startThread({ pgDataPath, loadDataDir: await options.loadDataDir?.arrayBuffer(), fsync });
    options.onThreadStarted?.();
    await thread.listening;
    // A failed creation keeps the marker: the next start begins again from an empty directory.
    // PostgreSQL has synced the new files (a first start fsyncs the data directory, see
    // embedded-thread.ts); the marker's removal is synced too, or a power cut could bring it back
    // and the next start would create the database again over acknowledged commits.
    if (creating) {
      await rm(marker, { force: true });
      if (fsync) await syncPath(options.dataDir);
    }
  } catch (error) {
    // The thread is gone before the lock is released: no second opener meets a PGlite still writing.
    await thread?.terminate();
    await lock.release();
    throw error;
  }
  const running = thread;

  let closing: Promise<void> | undefined;
  return {
    url: `postgres://postgres@${await running.listening}/postgres`,
    async dumpDataDir() {
      const answer = await running.ask({ type: 'dump' });
      if (answer.type !== 'dumped') throw new Error(`the embedded database thread answered ${answer.type} to dump`);
      return answer.tarball;
    },
    close() {
      closing ??= (async () => {
        try {
          await running.stop();
        } finally {
          await lock.release();
        }
      })();
      return closing;
    },
    crashThread() {
      running.post({ type: 'crash' });
    },
  };
}

/**
 * A close waits for the statement in progress (PGlite finishes it first). One that has not finished
 * by then is cut off by terminating the thread, as a crash would: a frozen PGlite must not hang the
 * service's shutdown forever.
 */
const CLOSE_TIMEOUT_MS = 60_000;

interface DatabaseThread {
  /** The server's `host:port`; rejects with the thread's error when the start fails. */
  listening: Promise<string>;
  /** Sends a request and waits for its answer; rejects with the thread's error or, once it is gone, with why. */
  ask(request: Exclude<ThreadRequest, { type: 'crash' }>): Promise<ThreadMessage>;
  post(request: ThreadRequest): void;
  /** Closes PGlite and ends the thread. Resolves when the thread is gone, even when it had died before. */
  stop(): Promise<void>;
  /** Ends the thread at once (a start that failed: PGlite is closed or was never open). */
  terminate(): Promise<void>;
}

function startThread(setup: ThreadSetup): DatabaseThread {
  const worker = new Worker(new URL('./embedded-thread.ts', import.meta.url), {
    workerData: setup,
    transferList: setup.loadDataDir ? [setup.loadDataDir] : [],
    name: 'embedded-database',
  });
  /** Requests in the order sent; the thread answers them in that order. */
  const waiting: { resolve(message: ThreadMessage): void; reject(error: Error): void }[] = [];
  /** Why the thread is gone (undefined while it runs). */
  let gone: Error | undefined;
  let stopping = false;
  let onListening!: { resolve(address: string): void; reject(error: Error): void };
  const listening = new Promise<string>((resolve, reject) => (onListening = { resolve, reject }));
  listening.catch(() => {}); // handled by startEmbeddedDatabase; later rejections are not news
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));

  worker.on('message', (message: ThreadMessage) => {
    if (message.type === 'listening') onListening.resolve(message.address);
    else if (message.type === 'failed') onListening.reject(startFailure(message.error));
    else if (message.type === 'error') waiting.shift()?.reject(message.error);
    else waiting.shift()?.resolve(message);
  });
  // An uncaught error in the thread (a bug, PGlite running out of memory) ends it; without this
  // listener the 'error' event would also end the process. The thread's sockets close with it, so
  // the client's queries fail and it cannot reconnect.
  let crash: Error | undefined;
  worker.on('error', (error: Error) => {
    crash = error;
  });
  worker.on('exit', (code) => {
    gone = stopping ? new Error('the embedded database is closed') : new Error(`the embedded database thread stopped (exit code ${code})${crash ? `: ${describe(crash)}` : ''}`, { cause: crash });
    onListening.reject(crash ? startFailure(crash) : gone);
    for (const request of waiting.splice(0)) request.reject(gone);
  });

  const ask = (request: Exclude<ThreadRequest, { type: 'crash' }>) =>
    new Promise<ThreadMessage>((resolve, reject) => {
      if (gone) return reject(gone);
      waiting.push({ resolve, reject });
      worker.postMessage(request);
    });

  return {
    listening,
    ask,
    post: (request) => {
      if (!gone) worker.postMessage(request);
    },
    async terminate() {
      stopping = true;
      await worker.terminate();
      await exited;
    },
    async stop() {
      if (gone) return;
      stopping = true;
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), CLOSE_TIMEOUT_MS)));
      // A close that fails in the thread (PGlite's own error) is the caller's to see, after the thread is gone.
      const closed = ask({ type: 'close' }).then(
        () => undefined,
        (error: Error) => (gone ? undefined : error),
      );
      try {
        const outcome = await Promise.race([closed, late]);
        await worker.terminate();
        await exited;
        if (outcome === 'late') throw new Error(`the embedded database did not close within ${CLOSE_TIMEOUT_MS / 1000} s; its thread was terminated`);
        if (outcome) throw outcome;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/**
 * Why a start failed: the thread's error itself, or, when it has no message (PGlite unpacking a
 * tarball that is not one throws a bare TypeError whose cause says "incorrect header check"),
 * one that describes it.
 */
function startFailure(error: Error): Error {
  return error.message ? error : new Error(`the embedded database failed to start: ${describe(error)}`, { cause: error });
}

/** An error's class and message, and its causes' messages: "TypeError (incorrect header check)". */
function describe(error: Error): string {
  const causes: string[] = [];
  for (let cause = error.cause; cause instanceof Error && causes.length < 5; cause = cause.cause) causes.push(cause.message);
  return `${error.name}${error.message ? `: ${error.message}` : ''}${causes.length ? ` (${causes.join('; ')})` : ''}`;
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
