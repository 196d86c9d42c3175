/**
 * Drops the connections of a server that stopped answering. postgres.js 3.4 cannot close one
 * connection of a pool, and a connection to a stopped server process (or across a partition) waits
 * for ever: TCP keeps it open. So every socket of the pool is made here (postgres.js's documented
 * `socket` option: its connections, their cancel requests and its LISTEN connection), and when a
 * deadline makes the server suspect (deadline.ts: a query that waited its whole deadline for a
 * connection, or one a connection took and did not answer) and the server does not answer a fresh
 * connection within PROBE_TIMEOUT_MS either, all of them are destroyed. postgres.js takes that as
 * the server closing them: the queries on them fail (CONNECTION_CLOSED), a transaction on one is
 * lost (transaction-guard.ts), LISTEN is set up again, and connections are made again on demand,
 * so the pool recovers alone once the server answers. A server that answers the probe keeps its
 * connections: the query was only slow, and its cancel request stops it.
 *
 * Why not a new pool instead (end the old one with `sql.end({ timeout: 0 })`)? Its connections would
 * only be half-closed (postgres.js ends the socket politely and waits for a server that does not
 * answer), every holder of the pool would need a proxy to the current one, and its LISTEN
 * subscriptions would stay behind on the old pool.
 */
import net from 'node:net';
import postgres from 'postgres';

/** How long the probe waits for a fresh connection's `select 1`: the readiness bound (specification, /readyz). */
export const PROBE_TIMEOUT_MS = 2000;

/** At most one probe this often: a busy but healthy server (queries waiting for a connection) is not probed for every late query. */
const PROBE_INTERVAL_MS = 5000;

/**
 * After a drop, none for this long: the connections made again meanwhile are still in their
 * start-up while the server hangs, and postgres.js ends those itself after its connect_timeout (30 s
 * by default); dropping them sooner would only fill the server's accept queue with more.
 */
const DROP_QUIET_MS = 30_000;

export interface ConnectionWatchLogger {
  info(obj: object, msg?: string): void;
  warn?(obj: object, msg?: string): void;
}

/** What postgres.js passes to its `socket` option: the parsed connection options. */
interface SocketOptions {
  host: string[];
  port: number[];
  path: string | false;
}

export type SocketFactory = (options: SocketOptions) => net.Socket;

export interface ConnectionWatch {
  /** postgres.js's `socket` option for the pool. */
  socket: SocketFactory;
  /** A deadline makes the server suspect (DeadlineActions.suspect): probe it, and drop every connection when it does not answer. */
  suspect(): void;
  /** Destroys every socket of the pool (after `sql.end`, for the ones still half-open); answers how many. */
  dropAll(): number;
}

export function watchConnections(url: string, logger?: ConnectionWatchLogger): ConnectionWatch {
  const sockets = trackedSockets();
  let checking = false;
  let lastProbe = -Infinity;
  let lastDrop = -Infinity;
  return {
    socket: sockets.socket,
    dropAll: sockets.destroyAll,
    suspect() {
      // One probe at a time, and few: a hung server makes every call suspect it.
      const now = performance.now();
      if (checking || now - lastProbe < PROBE_INTERVAL_MS || now - lastDrop < DROP_QUIET_MS) return;
      checking = true;
      lastProbe = now;
      void check().finally(() => {
        checking = false;
      });
    },
  };

  async function check(): Promise<void> {
    const outcome = await probe(url);
    if (outcome === 'answered') {
      logger?.info({ probe: outcome }, 'a database call outlived its deadline, but the server answers: connections kept');
      return;
    }
    lastDrop = performance.now();
    const dropped = sockets.destroyAll();
    (logger?.warn ?? logger?.info)?.call(logger, { probe: outcome, dropped }, 'the database server does not answer: its connections were dropped; new ones are made on demand');
  }
}

/** A `socket` option that remembers the sockets it made, so they can all be destroyed. */
export function trackedSockets(): { socket: SocketFactory; destroyAll(): number } {
  const open = new Set<net.Socket>();
  let turn = 0;
  return {
    socket(options) {
      // A socket whose close went unseen (postgres.js strips a socket's listeners before TLS wraps it).
      for (const socket of open) if (socket.destroyed) open.delete(socket);
      // postgres.js connects a socket it made itself; one from this option must come connecting.
      const i = turn++ % options.host.length;
      const host = options.host[i]!;
      const port = options.port[i] ?? options.port[0]!;
      const socket = options.path ? net.connect(options.path) : net.connect(port, host);
      // postgres.js names these in its errors and uses `host` as the TLS server name.
      Object.assign(socket, { host, port });
      open.add(socket);
      socket.once('close', () => open.delete(socket));
      return socket;
    },
    destroyAll() {
      const count = open.size;
      for (const socket of open) socket.destroy();
      open.clear();
      return count;
    },
  };
}

type ProbeOutcome = 'answered' | 'timeout' | 'unreachable';

/** `select 1` on a fresh connection of its own. An error the server sent (too many connections, starting up) counts as an answer. */
async function probe(url: string): Promise<ProbeOutcome> {
  const own = trackedSockets();
  const client = postgres(url, {
    max: 1,
    fetch_types: false,
    connect_timeout: Math.ceil(PROBE_TIMEOUT_MS / 1000) + 1,
    onnotice: () => {},
    connection: { application_name: 'workspace-api probe' },
    socket: own.socket,
  } as postgres.Options<{}>);
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      client`select 1`.then(
        (): ProbeOutcome => 'answered',
        (error: unknown): ProbeOutcome => ((error as Error | null)?.name === 'PostgresError' ? 'answered' : 'unreachable'),
      ),
      new Promise<ProbeOutcome>((resolve) => {
        timer = setTimeout(resolve, PROBE_TIMEOUT_MS, 'timeout');
      }),
    ]);
  } finally {
    clearTimeout(timer);
    // End first (a connection still starting up is then not made again), then cut what is left.
    await client.end({ timeout: 0 }).catch(() => undefined);
    own.destroyAll();
  }
}
