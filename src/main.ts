/**
 * The one command line: `node src/main.ts <command>`.
 *   serve            everything for one machine (API on the embedded database when no DATABASE_URL)
 *   migrate          apply pending migrations, then exit
 *   migrate status   report shipped, applied, pending and unknown migrations as JSON
 *   grant-admin <email>  make the existing user with this email a platform admin (docs/platform-admin.md)
 * Migrations run before `serve` starts listening (and before grant-admin); `serve` also makes the
 * existing users listed in ADMIN_EMAILS platform admins.
 */
import { once } from 'node:events';
import type { Server } from 'node:http';
import { describeGrant, grantAdmin, grantConfiguredAdmins } from './admin/grant-admin.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { openDatabase, type Database } from './db/connection.ts';
import { migrate, migrationStatus } from './db/migrations.ts';
import { buildApp } from './http/app.ts';
import { createLogger, type Logger } from './logger.ts';

const USAGE = 'usage: node src/main.ts serve | migrate [status] | grant-admin <email>';

async function main(argv: string[]): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`Configuration error: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
  const logger = createLogger(config.logLevel);
  const [command, sub] = argv;
  switch (command) {
    case 'serve':
      return serve(config, logger);
    case 'migrate':
      return runMigrate(config, logger, sub === 'status');
    case 'grant-admin':
      if (!sub) break;
      return runGrantAdmin(config, logger, sub);
  }
  console.error(USAGE);
  process.exit(2);
}

async function open(config: Config, logger: Logger): Promise<Database> {
  return openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, logger });
}

async function runMigrate(config: Config, logger: Logger, statusOnly: boolean): Promise<void> {
  const db = await open(config, logger);
  try {
    if (statusOnly) {
      console.log(JSON.stringify(await migrationStatus(db.sql), null, 2));
    } else {
      const applied = await migrate(db.sql, { logger });
      logger.info({ applied }, applied.length > 0 ? 'migrations applied' : 'database is up to date');
    }
  } finally {
    await db.close();
  }
}

async function runGrantAdmin(config: Config, logger: Logger, email: string): Promise<void> {
  const db = await open(config, logger);
  let result;
  try {
    await migrate(db.sql, { logger });
    result = await grantAdmin(db.sql, email, { now: new Date(), via: 'grant-admin' });
  } finally {
    await db.close();
  }
  if (result.status === 'no-such-user') {
    console.error(describeGrant(result));
    process.exit(1);
  }
  console.log(describeGrant(result));
}

async function serve(config: Config, logger: Logger): Promise<void> {
  const db = await open(config, logger);
  await migrate(db.sql, { logger });
  await grantConfiguredAdmins(db.sql, config.adminEmails, logger, new Date());
  const { app } = await buildApp({ config, db, logger });
  const server: Server = app.listen(config.port, config.host);
  // Node's default 300 s would cut off a slow 25 MiB upload long before its address (15 minutes) expires.
  server.requestTimeout = 15 * 60_000;
  await once(server, 'listening');
  logger.info({ url: config.publicUrl, host: config.host, port: config.port, database: db.kind }, 'listening');

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    server.close();
    server.closeIdleConnections();
    await db.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
}

main(process.argv.slice(2)).catch((error: unknown) => {
  // Startup failures (a changed migration, an unreachable database) end the process with the reason.
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
