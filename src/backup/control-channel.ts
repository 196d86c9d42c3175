/**
 * The running service's control channel: a Unix domain socket, DATA_DIR/control/service.sock, in
 * a directory only the service's user may enter (0700), the socket itself 0600. Whoever can open it
 * can read every tenant's data (it takes backups), so only the owner of DATA_DIR may: the kernel
 * checks the directory's permissions on connect, and the client checks the directory and the socket
 * before it connects (owner, mode, a socket and not a link), so it never hands its request to a
 * socket someone else put there.
 *
 * One request per connection, a line of JSON each way: `{"type":"backup","path":"/abs"}` answered
 * `{"ok":true,"manifest":{...}}` or `{"ok":false,"error":"..."}`. One backup at a time (takeBackup).
 */
import { once } from 'node:events';
import { chmod, lstat, mkdir, unlink } from 'node:fs/promises';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Database } from '../db/connection.ts';
import type { Logger } from '../logger.ts';
import type { BackupManifest } from './manifest.ts';
import { scheduleBackups, type BackupSchedule } from './schedule.ts';
import { takeBackup } from './take-backup.ts';

export function controlDirectory(dataDir: string): string {
  return join(dataDir, 'control');
}

export function controlSocketPath(dataDir: string): string {
  return join(controlDirectory(dataDir), 'service.sock');
}

export interface BackupRequest {
  type: 'backup';
  /** Absolute: the service's working directory is not the caller's. */
  path: string;
}

export type ControlAnswer = { ok: true; manifest: BackupManifest } | { ok: false; error: string };

export interface ServeBackupsOptions {
  dataDir: string;
  db: Database;
  /** config.storage.driver === 'local'. */
  localUploads: boolean;
  logger: Logger;
  /** Backups on a schedule too (schedule.ts), when given. */
  schedule?: BackupSchedule | undefined;
}

/**
 * Starts answering backup requests for the embedded database `db` (nothing on a database server),
 * and the scheduled backups if any. Never throws: a channel that cannot start (a DATA_DIR path
 * longer than a socket's 104-108 bytes) is logged, and the service runs without it (`backup` then
 * says so). Closes with the process.
 */
export async function serveBackups(options: ServeBackupsOptions): Promise<{ close(): Promise<void> } | undefined> {
  if (options.db.kind !== 'embedded') return undefined;
  const scheduled = options.schedule ? scheduleBackups({ dataDir: options.dataDir, db: options.db, localUploads: options.localUploads, logger: options.logger, schedule: options.schedule }) : undefined;
  let channel: { close(): Promise<void> } | undefined;
  try {
    channel = await listen(options);
  } catch (error) {
    options.logger.warn({ err: error, path: controlSocketPath(options.dataDir) }, 'control channel not started: `backup` cannot reach this service');
  }
  return {
    async close() {
      scheduled?.stop();
      await channel?.close();
    },
  };
}

async function listen(options: ServeBackupsOptions): Promise<{ close(): Promise<void> }> {
  const dir = controlDirectory(options.dataDir);
  const path = controlSocketPath(options.dataDir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const found = await lstat(dir);
  if (!found.isDirectory() || (process.getuid && found.uid !== process.getuid())) throw new Error(`${dir} is not a directory of this user`);
  await chmod(dir, 0o700);
  // A socket left by a process that died: this process holds DATA_DIR's lock, so it is nobody's.
  await unlink(path).catch(() => undefined);
  const server: Server = createServer((socket) => {
    void answer(socket, async (request) => {
      const manifest = await takeBackup({ dataDir: options.dataDir, db: options.db, destination: request.path, localUploads: options.localUploads, logger: options.logger }).catch((error: unknown) => {
        options.logger.warn({ err: error, destination: request.path }, 'backup failed');
        throw error;
      });
      return { ok: true, manifest };
    }).catch((error: unknown) => options.logger.warn({ err: error }, 'control channel: a request failed'));
  });
  server.listen(path);
  await once(server, 'listening');
  await chmod(path, 0o600);
  options.logger.info({ path }, 'control channel listening');
  return {
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await unlink(path).catch(() => undefined);
    },
  };
}

/** Reads one request line, answers it, closes. A failed backup is answered with its reason. */
async function answer(socket: Socket, handle: (request: BackupRequest) => Promise<ControlAnswer>): Promise<void> {
  socket.on('error', () => undefined); // a client that went away: nothing to answer
  const lines = createInterface({ input: socket });
  const line = await new Promise<string | undefined>((resolve) => {
    lines.once('line', resolve);
    lines.once('close', () => resolve(undefined));
  });
  lines.close();
  if (line === undefined) return; // closed before asking anything
  let reply: ControlAnswer;
  try {
    const request = JSON.parse(line) as Partial<BackupRequest>;
    if (request.type !== 'backup' || typeof request.path !== 'string' || !request.path.startsWith('/')) {
      reply = { ok: false, error: 'Unknown request: expected {"type":"backup","path":"<absolute path>"}.' };
    } else {
      reply = await handle(request as BackupRequest);
    }
  } catch (error) {
    reply = { ok: false, error: error instanceof Error ? error.message : String(error) };
  }
  socket.end(`${JSON.stringify(reply)}\n`);
}

/**
 * Asks the service running on `dataDir` for a backup into `path` (absolute) and waits for its
 * answer. Rejects when the channel is missing or not safe to use (checkChannel), or the service
 * does not answer.
 */
export async function askForBackup(dataDir: string, path: string): Promise<ControlAnswer> {
  const socketPath = await checkChannel(dataDir);
  const socket = connect(socketPath);
  await once(socket, 'connect');
  socket.write(`${JSON.stringify({ type: 'backup', path } satisfies BackupRequest)}\n`);
  const lines = createInterface({ input: socket });
  const closed = once(socket, 'close').then(() => {
    throw new Error('The service closed the control channel without answering (did it stop?).');
  });
  try {
    const [line] = (await Promise.race([once(lines, 'line'), closed])) as [string];
    return JSON.parse(line) as ControlAnswer;
  } finally {
    socket.destroy();
  }
}

/** The socket's path, once the directory and the socket are this user's and closed to others. */
async function checkChannel(dataDir: string): Promise<string> {
  const dir = controlDirectory(dataDir);
  const path = controlSocketPath(dataDir);
  const uid = process.getuid?.();
  const directory = await lstat(dir).catch(() => undefined);
  if (!directory) throw new Error(`There is no control channel in ${dir}.`);
  if (!directory.isDirectory()) throw new Error(`${dir} is not a directory; refusing to use it as the control channel.`);
  if (uid !== undefined && directory.uid !== uid) throw new Error(`${dir} belongs to user ${directory.uid}, not to this user (${uid}); run backup as the service's user.`);
  if ((directory.mode & 0o077) !== 0) throw new Error(`${dir} is open to other users (mode ${(directory.mode & 0o777).toString(8)}); refusing to use it.`);
  const socket = await lstat(path).catch(() => undefined);
  if (!socket) throw new Error(`There is no control channel in ${dir}.`);
  if (!socket.isSocket()) throw new Error(`${path} is not a socket; refusing to use it.`);
  if (uid !== undefined && socket.uid !== uid) throw new Error(`${path} belongs to user ${socket.uid}, not to this user (${uid}).`);
  return path;
}
