/**
 * One app of bench/tracing.ts, in a process of its own (tracing is per process): the real app on
 * a fresh embedded database, with one tenant, from the tree at `root` (argv[2]: this tree, or the
 * tree before tracing, for today's baseline). With OTEL_EXPORTER_OTLP_ENDPOINT set it starts
 * tracing first (this tree only). Tells its parent, over IPC, the two targets to probe; stops on
 * `stop`.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = process.argv[2]!;
// The modules of the tree at `root`, typed as this tree's (the tree before tracing has the same ones, tracing.ts aside).
const from = async <T>(path: string): Promise<T> => (await import(pathToFileURL(join(root, path)).href)) as T;

const tracing = process.env.OTEL_EXPORTER_OTLP_ENDPOINT ? await (await from<typeof import('../src/telemetry/tracing.ts')>('src/telemetry/tracing.ts')).startTracing('workspace-api-bench') : null;
const support = await from<typeof import('./support.ts')>('bench/support.ts');
const { createTenant } = await from<typeof import('./document-app.ts')>('bench/document-app.ts');
const db = await support.openBenchDatabase();
const tenant = await createTenant(db);
const app = await support.startFullApp(db);
const headers = { authorization: `Bearer ${tenant.users[0]!.token}` };
process.send!({
  health: { url: `${app.url}/api/v1/health` },
  list: { url: `${app.url}/api/v1/workspaces?organizationId=${tenant.organizationId}`, headers },
});
process.once('message', () => {
  void (async () => {
    await app.close();
    await tracing?.shutdown();
    await db.close();
    process.disconnect();
  })();
});
