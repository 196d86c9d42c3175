// `node src/main.ts serve` as a process: SIGTERM drains (no new connections, idle keep-alive
// connections closed, a running request finishes and gets its answer), then the database is
// closed, its lock released, and the process exits 0. A second signal cuts what still runs.
// Every step waits for an event (a log line, a socket event, the exit), never for a duration.
import { once } from 'node:events';
import { rm, stat } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/connection.ts';
import { migratedDataDir } from '../support/database.ts';
import { serveProcess, type ServedProcess } from '../support/serve-process.ts';

let dataDir: string;
let served: ServedProcess | undefined;

beforeEach(async () => {
  // A migrated database already there: the process starts as on a restart, without the template cache.
  dataDir = await migratedDataDir();
});

afterEach(async () => {
  await served?.kill();
  served = undefined;
  await rm(dataDir, { recursive: true, force: true });
});

async function serve(): Promise<ServedProcess> {
  served = await serveProcess({ DATA_DIR: dataDir });
  return served;
}

/** A raw HTTP/1.1 connection that collects everything the server sends. */
async function rawConnection(port: number): Promise<{ socket: Socket; received(): string; closed: Promise<void>; receivedText(pattern: RegExp): Promise<string> }> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  let text = '';
  const watchers: { pattern: RegExp; resolve(text: string): void }[] = [];
  socket.on('data', (chunk: Buffer) => {
    text += chunk.toString('latin1');
    for (const watcher of watchers.filter((w) => w.pattern.test(text))) watcher.resolve(text);
  });
  const closed = once(socket, 'close').then(() => undefined);
  return {
    socket,
    received: () => text,
    closed,
    receivedText(pattern) {
      if (pattern.test(text)) return Promise.resolve(text);
      return new Promise((resolve, reject) => {
        watchers.push({ pattern, resolve });
        closed.then(() => reject(new Error(`connection closed before ${pattern}; got: ${text}`)), reject);
      });
    },
  };
}

const body = JSON.stringify({ json: {} });
const slowRequestHead = 'POST /rpc/system/health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' + `Content-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`;

/** What a new connection gets: 'connected', or the error code. */
async function connectOutcome(port: number): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  try {
    return await new Promise<string>((resolve) => {
      socket.once('connect', () => resolve('connected'));
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    });
  } finally {
    socket.destroy();
  }
}

async function lockReleased(): Promise<boolean> {
  return stat(join(dataDir, 'pg.lock')).then(
    () => false,
    () => true,
  );
}

describe('serve stops on SIGTERM by draining', () => {
  it('lets a running request finish, closes idle keep-alive connections, then closes the database and exits 0', { timeout: 90_000 }, async () => {
    const { child, port, logged, exited } = await serve();

    // An idle keep-alive connection: one request answered, then nothing.
    const idle = await rawConnection(port);
    idle.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await idle.receivedText(/\r\n\r\n\{"status":"ok"\}/);

    // A running request: the server has its headers (it answered 100 Continue) but not its body yet.
    const slow = await rawConnection(port);
    slow.socket.write(slowRequestHead);
    await slow.receivedText(/^HTTP\/1\.1 100 Continue\r\n\r\n/);

    child.kill('SIGTERM');
    await logged('shutting down: draining requests');
    await idle.closed; // closed by the server
    expect(await connectOutcome(port)).toBe('ECONNREFUSED');
    expect(child.exitCode).toBeNull(); // still waiting for the running request

    slow.socket.write(body);
    await slow.closed; // the server closes the connection after the answer
    const [head, answer] = slow
      .received()
      .replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '')
      .split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 200 /);
    expect(head).toMatch(/\r\nconnection: close\r\n/i);
    expect(JSON.parse(answer!)).toMatchObject({ json: { status: 'ok' } });

    expect(await exited).toEqual([0, null]);
    expect(await logged('requests drained')).toMatchObject({ drained: true, cut: 0 });
    expect(await lockReleased()).toBe(true);
    // The database was closed cleanly and can be opened again.
    const db = await openDatabase({ dataDir });
    try {
      await db.ping();
    } finally {
      await db.close();
    }
  });

  it('cuts the requests still running at a second signal, and still exits 0 with the lock released', { timeout: 90_000 }, async () => {
    const { child, port, logged, exited } = await serve();
    const slow = await rawConnection(port);
    slow.socket.write(slowRequestHead);
    await slow.receivedText(/^HTTP\/1\.1 100 Continue\r\n\r\n/);

    child.kill('SIGINT');
    await logged('shutting down: draining requests');
    child.kill('SIGINT');
    await slow.closed; // cut: no answer after the 100 Continue
    expect(slow.received()).toBe('HTTP/1.1 100 Continue\r\n\r\n');

    expect(await exited).toEqual([0, null]);
    expect(await logged('requests drained')).toMatchObject({ drained: false, cut: 1 });
    expect(await lockReleased()).toBe(true);
  });
});

describe('serve stops when its job queue cannot start', () => {
  it('serves first, then logs why, drains, closes the database and exits 1', { timeout: 90_000 }, async () => {
    // pg-boss's schema broken on purpose: the queue starts after the API listens (jobs/queue.ts, Starting).
    const db = await openDatabase({ dataDir });
    try {
      await db.sql`drop table pgboss.queue cascade`;
    } finally {
      await db.close();
    }
    const { logged, exited } = await serve();
    expect(await logged('the job queue could not start: stopping')).toMatchObject({ level: 50 });
    expect(await exited).toEqual([1, null]);
    expect(await lockReleased()).toBe(true);
    // The database was closed cleanly and can be opened again.
    const reopened = await openDatabase({ dataDir });
    await reopened.close();
  });
});
