/**
 * pg-boss's own database client when DATABASE_URL is a pooler and DATABASE_DIRECT_URL the server
 * itself. pg-boss (node-postgres) works through a transaction-mode pooler for everything but LISTEN:
 * its statements are unnamed (no prepared statements to lose between transactions), its
 * transactions are single BEGIN ... COMMIT blocks or one checked-out client from BEGIN to COMMIT,
 * its advisory locks are transaction-scoped (pg_advisory_xact_lock, pg_try_advisory_xact_lock),
 * and it sends no startup parameter but application_name, which PgBouncer tracks itself. Its
 * LISTEN (a dedicated pg.Client, held for good) needs a session: through a transaction pooler it
 * would be lost with the transaction, and pg-boss would find the channel gone at each heartbeat and
 * reconnect for ever. So its pool stays on the pooled address and its LISTEN goes to the server.
 */
import type { DatabaseOptions } from 'pg-boss';
import type { ListenHandle } from 'pg-boss/dist/types.js';
import BossDb from 'pg-boss/dist/db.js';

export class SessionListenDb extends BossDb {
  readonly #session: BossDb;

  /** `pooled`: the pool's options (on DATABASE_URL); `directUrl`: where LISTEN connects. */
  constructor(pooled: DatabaseOptions, directUrl: string) {
    super(pooled);
    // Its pool stays empty: only its LISTEN client connects.
    this.#session = new BossDb({ ...pooled, connectionString: directUrl, max: 1 });
    this.#session.on('error', (error: unknown) => this.emit('error', error));
  }

  override async open(): Promise<void> {
    await super.open();
    await this.#session.open();
  }

  override async close(): Promise<void> {
    await Promise.all([super.close(), this.#session.close()]);
  }

  override listen(channel: string, onNotification: (payload: string) => void, onReconnect: () => void): Promise<ListenHandle> {
    return this.#session.listen(channel, onNotification, onReconnect);
  }
}
