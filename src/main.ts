/**
 * The one command line: `node src/main.ts <command>`.
 *   serve            everything for one machine: the API, the companion AI service (a child process), and the job
 *                    worker unless WORKER=off (on the embedded database when no DATABASE_URL)
 *   api              the API alone (with the job worker unless WORKER=off)
 *   worker           the job worker alone
 *   ai               the companion AI service alone (src/ai-service/), on AI_HOST:AI_PORT
 *   migrate          apply pending migrations, then exit
 *   migrate status   report shipped, applied, pending and unknown migrations as JSON
 *   grant-admin <email>  make the existing user with this email a platform admin (docs/platform-admin.md)
 *   backup <path>    a consistent backup of the embedded database and the local uploads into the new directory <path>,
 *                    taken by the running service (through its control channel) or, when stopped, by this command
 *   restore <path>   restore such a backup into an empty DATA_DIR (docs/backups.md); both refuse with DATABASE_URL
 * Migrations run before `serve`, `api` and `worker` start (and before grant-admin); `serve` and `api` also make the
 * existing users listed in ADMIN_EMAILS platform admins.
 *
 * A new embedded database starts as a copy of the migrated template (src/composition/database-template.ts: 0.4 s
 * instead of initdb's 3.5-6 s); `--no-template` makes it the slow way. `serve` stops on SIGTERM or
 * SIGINT by draining (composition/shutdown.ts), then closing the database, and exits 0. What each
 * command runs is in composition/commands.ts; this file only reads the command line.
 */
import { enableCompileCache } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { Config } from './config.ts';

// V8's code cache on disk, for every module of the service: a restart compiles them from the
// cache, about a third of a second sooner. Node checks each file's hash, so an edited file is
// compiled afresh. Only modules loaded after this call are cached, hence the dynamic imports.
// The threads and child processes inherit it through the environment: each document is parsed in
// a thread of its own, whose modules (and TypeScript's type stripping of them) otherwise cost
// twice the CPU at every start (docs/benchmarks.md).
const compileCache = fileURLToPath(new URL('../node_modules/.cache/workspace-api/compile/', import.meta.url));
enableCompileCache(compileCache);
process.env.NODE_COMPILE_CACHE ??= compileCache;
const [{ ConfigError, loadConfig }, { runAi, runGrantAdmin, runMigrate, runWorker, serve }, { createLogger }] = await Promise.all([
  import('./config.ts'),
  import('./composition/commands.ts'),
  import('./logger.ts'),
]);

const USAGE = 'usage: node src/main.ts serve|api|worker [--no-template] | ai | migrate [status] [--no-template] | grant-admin <email> | backup <path> | restore <path>';

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
  const useTemplate = !argv.includes('--no-template');
  const [command, sub] = argv.filter((arg) => arg !== '--no-template');
  switch (command) {
    case 'serve':
      return serve(config, logger, useTemplate, { ai: true });
    case 'api':
      return serve(config, logger, useTemplate, { ai: false });
    case 'worker':
      return runWorker(config, logger, useTemplate);
    case 'ai':
      return runAi(config, logger);
    case 'migrate':
      return runMigrate(config, logger, sub === 'status', useTemplate);
    case 'grant-admin':
      if (!sub) break;
      return runGrantAdmin(config, logger, sub);
    case 'backup':
      if (!sub) break;
      return (await import('./composition/backup-commands.ts')).runBackup(config, logger, sub);
    case 'restore':
      if (!sub) break;
      return (await import('./composition/backup-commands.ts')).runRestore(config, sub);
  }
  console.error(USAGE);
  process.exit(2);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  // Startup failures (a changed migration, an unreachable database) end the process with the reason.
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
