/**
 * The entry of the worker thread embedded.ts starts: PGlite and its wire-protocol server live here.
 * PGlite runs every statement synchronously on the thread that owns it, so on the API's thread an
 * HNSW insert of thousands of chunks stopped every request for as long as it ran; here it only
 * occupies this thread (another core), and the API's thread just reads and writes a loopback socket.
 *
 * It opens the database, starts the server and says `listening` (or `failed` with the error, then
 * leaves). After that it answers `dump` and `close` one at a time, in arrival order. The main thread
 * holds the data directory's lock and terminates this thread once it has said `closed`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite, type Extension } from '@electric-sql/pglite';
import { pgcrypto } from '@electric-sql/pglite/contrib/pgcrypto';
import { vector } from '@electric-sql/pglite-pgvector';
import { PGLiteSocketHandler, PGLiteSocketServer } from '@electric-sql/pglite-socket';
import type { EmbeddedExtensionName, ThreadMessage, ThreadRequest, ThreadSetup } from './embedded-protocol.ts';

// Every extension a migration may create must be loaded here: PGlite cannot load one later.
// Production servers ship both (pgcrypto is contrib). The type keeps this list and
// embeddedExtensionNames (part of the template's key) the same.
const extensions: Record<EmbeddedExtensionName, Extension> = { vector, pgcrypto };

if (!parentPort) throw new Error('embedded-thread.ts runs as a worker thread of embedded.ts');
corkAnswers();
const port = parentPort;
const setup = workerData as ThreadSetup;
const post = (message: ThreadMessage) => port.postMessage(message);

let db: PGlite | undefined;
let server: PGLiteSocketServer | undefined;
try {
  db = await PGlite.create(setup.pgDataPath, {
    extensions,
    startParams: startParams(setup.fsync),
    // An in-memory Blob over the moved bytes: no copy of the tarball stays on the main thread.
    ...(setup.loadDataDir ? { loadDataDir: new Blob([setup.loadDataDir]) } : {}),
  });
  if (setup.fsync) await checkDurable(db);
  // maxConnections 1: the socket multiplexer mixes up concurrent connections' extended-protocol
  // messages (pglite #1046, PR #977), so only one client connection is allowed; port 0 lets the
  // OS pick a free port.
  server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 1 });
  await server.start();
  post({ type: 'listening', address: server.getServerConn() });
} catch (error) {
  await db?.close().catch(() => undefined);
  postError('failed', error);
  port.close();
}

if (db && server) serve(db, server);

function serve(db: PGlite, server: PGLiteSocketServer): void {
  let serving = true;
  const stopServing = async () => {
    if (!serving) return;
    serving = false;
    await server.stop();
  };
  const answer = async (request: Exclude<ThreadRequest, { type: 'crash' }>) => {
    try {
      await stopServing();
      if (request.type === 'dump') {
        // An in-memory Blob: posting it shares its bytes with the main thread instead of copying them.
        post({ type: 'dumped', tarball: await db.dumpDataDir('none') });
      } else {
        await db.close();
        post({ type: 'closed' });
      }
    } catch (error) {
      postError('error', error);
    }
  };
  /** Each request starts after the previous one has answered: a close waits for a dump in progress. */
  let queue: Promise<void> = Promise.resolve();
  port.on('message', (request: ThreadRequest) => {
    if (request.type === 'crash') {
      setImmediate(() => {
        throw new Error('embedded database thread crash requested');
      });
      return;
    }
    queue = queue.then(() => answer(request));
  });
}

/**
 * The socket server answers each message of the wire protocol as PGlite gives it, one socket write
 * each (ParseComplete, BindComplete, every DataRow, CommandComplete, ReadyForQuery): about 150
 * writes, each a system call, for one document indexed. Corked while it handles what one read
 * brought (a statement's Parse, Bind, Describe, Execute and Sync come together), its answers leave
 * in one write when it is done: measured, the database's thread and the API's spent about a tenth
 * less CPU while a workspace was indexed (docs/benchmarks.md). Nothing waits longer for an answer
 * that was complete: the server handles a read's messages back to back, with no wait for the client.
 */
function corkAnswers(): void {
  type Handler = { socket: import('node:net').Socket | null; handleData(data: Buffer): Promise<number> };
  const prototype = PGLiteSocketHandler.prototype as unknown as Handler;
  const handleData = prototype.handleData;
  // Another version of the package may have moved it: its answers then go uncorked, as before.
  if (typeof handleData !== 'function') return;
  prototype.handleData = async function (this: Handler, data: Buffer) {
    const socket = this.socket;
    socket?.cork();
    try {
      return await handleData.call(this, data);
    } finally {
      socket?.uncork();
    }
  };
}

/**
 * PGlite's start parameters with PostgreSQL's fsync on or off. PGlite's own include `-F` (fsync
 * off): a commit was acknowledged once in the page cache. Without it, a commit returns after
 * fdatasync of its WAL (wal_sync_method's Linux default), checkpoints fsync the files they wrote,
 * and a start after a crash fsyncs the whole data directory before recovery (as after unpacking
 * the template). Those calls reach the disk only through the patched file system
 * (patches/@electric-sql+pglite+0.5.14.patch; PGlite issue 1107).
 */
function startParams(fsync: boolean): string[] {
  return fsync ? PGlite.defaultStartParams.filter((param) => param !== '-F') : PGlite.defaultStartParams;
}

/** Refuses to run "durable" when it would not be: fsync off in PostgreSQL, or the file system patch missing (an install with --ignore-scripts). */
async function checkDurable(db: PGlite): Promise<void> {
  const { rows } = await db.query<{ fsync: string }>('show fsync');
  if (rows[0]?.fsync !== 'on') throw new Error(`the embedded database started with fsync ${rows[0]?.fsync ?? 'unknown'}`);
  // `mod` is PGlite's Emscripten module (protected in its types): the patch adds fsync to NODEFS.
  const nodefs = (db as unknown as { mod?: { FS: { filesystems: Record<string, { stream_ops?: { fsync?: unknown; fdatasync?: unknown } }> } } }).mod?.FS.filesystems.NODEFS;
  if (typeof nodefs?.stream_ops?.fsync !== 'function' || typeof nodefs.stream_ops.fdatasync !== 'function') {
    throw new Error("PGlite's Node file system does not sync to disk: patches/@electric-sql+pglite+0.5.14.patch is not applied (npm ci applies it)");
  }
}

/**
 * Posts an error as thrown: structured clone keeps its class, message, stack and cause (not its
 * other properties). One it cannot clone (a cause holding a function) goes as a plain copy.
 */
function postError(type: 'failed' | 'error', error: unknown): void {
  const thrown = error instanceof Error ? error : new Error(String(error));
  try {
    post({ type, error: thrown });
  } catch {
    const copy = new Error(thrown.message);
    copy.stack = thrown.stack ?? `${thrown.name}: ${thrown.message}`;
    post({ type, error: copy });
  }
}
