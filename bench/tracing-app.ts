/**
 * One app of bench/tracing.ts, in a process of its own (tracing is per process): the real app on
 * a fresh embedded database, with one tenant, from the tree at `root` (argv[2]: this tree, or the
 * tree before tracing, for today's baseline). Tells its parent, over IPC, the two targets to
 * probe. It starts with tracing off; `{ tracing: true }` starts it (this tree only: the SDK
 * exporting where OTEL_EXPORTER_OTLP_ENDPOINT says) and `{ tracing: false }` shuts it down again,
 * each answered `{ tracing }` once done, so that one process is measured both ways. Stops on
 * `stop`.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Tracing } from '../src/telemetry/tracing.ts';

export type AppMessage = 'stop' | { tracing: boolean };

const root = process.argv[2]!;
// The modules of the tree at `root`, typed as this tree's (the tree before tracing has the same ones, tracing.ts aside).
const from = async <T>(path: string): Promise<T> => (await import(pathToFileURL(join(root, path)).href)) as T;

const support = await from<typeof import('./support.ts')>('bench/support.ts');
const { createTenant } = await from<typeof import('./document-app.ts')>('bench/document-app.ts');
const db = await support.openBenchDatabase();
const tenant = await createTenant(db);
const app = await support.startFullApp(db);
const headers = { authorization: `Bearer ${tenant.users[0]!.token}` };
let tracing: Tracing | null = null;
process.on('message', (message: AppMessage) => {
  void (async () => {
    if (message === 'stop') {
      await app.close();
      await tracing?.shutdown();
      await db.close();
      process.disconnect();
      return;
    }
    if (message.tracing && !tracing) {
      const { startTracing } = await from<typeof import('../src/telemetry/tracing.ts')>('src/telemetry/tracing.ts');
      // Null when no exporter is configured: the answer says so, and the bench gives up.
      tracing = await startTracing('workspace-api-bench');
    } else if (!message.tracing && tracing) {
      await tracing.shutdown();
      tracing = null;
    }
    process.send!({ tracing: tracing !== null });
  })();
});
process.send!({
  health: { url: `${app.url}/api/v1/health` },
  list: { url: `${app.url}/api/v1/workspaces?organizationId=${tenant.organizationId}`, headers },
});
