/**
 * Latency that REST routing plus validation add to a validated procedure, in microseconds.
 *
 * Measured in process, without sockets: over loopback HTTP one request costs ~100 µs with tens of
 * µs of jitter (more on a shared machine), so a difference of a few µs does not come out stably.
 * Here the real REST router (restRouter, built from the contract exactly as buildApp builds it,
 * all operations registered in contract order) is called directly with a plain request object:
 * query parsing (what Express's req.query getter does with the default "simple" parser), the
 * route scan and path parameters, restInput's coercion, and callProcedure (authenticate, Ajv
 * validateInput, access check) run for real; the handler is a stub and the response object only
 * serialises the JSON. The baseline calls the same stub with the same input already built and
 * serialises the same answer, so the difference is what routing, coercion, validation and the
 * (stubbed) auth and membership lookups add. Authentication and memberships are stubbed because
 * they cost database round trips, which are not routing or validation.
 * The app-level middleware (request id, headers, CORS, limiter) is not included: it is measured
 * end to end by health-vs-bare.ts.
 */
import { parse as parseQuery } from 'node:querystring';
import type { Context, Handler } from '../src/context.ts';
import type { Principal } from '../src/auth/principal.ts';
import type { Database } from '../src/db/connection.ts';
import { streamHandlers } from '../src/composition/handlers.ts';
import { restRouter } from '../src/http/rest-transport.ts';
import { validateInput } from '../src/contract/validators.ts';
import { logger, median, openBenchDatabase, startFullApp } from './support.ts';

export const ROUTING_AIM_US = 50; // routing + validation add at most 50 µs per request

export interface RoutingResult {
  routedUs: number;
  directUs: number;
  /** Median of the per-batch differences routed - direct. */
  addedUs: number;
  /** validateInput('documents.list') alone, for scale. */
  validateUs: number;
}

const path = '/workspaces/ws_i5xx2bzn3kir2gshyl7sn5pk/documents?organizationId=org_pycdybk377oxtzq6svizx3or&limit=20';
const principal: Principal = { userId: 'usr_1', email: 'a@b.c', role: null, sessionId: 's', impersonatedBy: null };
const list: Handler<'documents.list'> = () => ({ items: [], nextCursor: null, storage: { usedBytes: 0, limitBytes: null } });

/** Just enough of Express's req/res for the REST route: what the router, restInput and the route read and write. */
function exchange(done: () => void) {
  const headers: Record<string, string> = {};
  const req = { method: 'GET', url: path, headers, get: (name: string) => headers[name.toLowerCase()], id: 'req_1', log: logger, clientIp: '127.0.0.1', principal, query: {} as object };
  const res = {
    statusCode: 0,
    body: '',
    locals: {} as Record<string, unknown>,
    status(code: number) {
      this.statusCode = code;
      return this;
    },
    json(value: unknown) {
      this.body = JSON.stringify(value);
      done();
    },
  };
  return { req, res };
}

export async function benchRoutingValidation(db: Database, { batches = 21, perBatch = 5000, warmup = 20_000, validations = 200_000 } = {}): Promise<RoutingResult> {
  // compose wires the services (config, limiters, overrides) as in production; the server itself is not used.
  const app = await startFullApp(db, {
    authenticate: async () => ({ principal, via: 'bearer' as const }),
    memberships: { roleIn: async () => 'owner', workspaceOrganization: async () => 'org_pycdybk377oxtzq6svizx3or' },
  });
  await app.close();
  const { services } = app;
  const router = restRouter({ 'documents.list': list }, streamHandlers, services);
  const ctx: Context = { requestId: 'req_1', log: logger, ip: '127.0.0.1', principal, services, tenant: null, row: undefined };

  // The last routed answer's body, for the error when one is not a 200.
  let answered = '';
  const routed = () =>
    new Promise<number>((resolve, reject) => {
      const { req, res } = exchange(() => ((answered = res.body), resolve(res.statusCode)));
      req.query = parseQuery(req.url.slice(req.url.indexOf('?') + 1));
      router(req as never, res as never, (error?: unknown) =>
        reject(error instanceof Error ? error : new Error(error === undefined ? `no route matched ${path}` : `the router passed on ${JSON.stringify(error)}`)),
      );
    });
  const direct = () =>
    new Promise<number>((resolve, reject) => {
      const { res } = exchange(() => resolve(res.statusCode));
      (async () => {
        const output = await list({ workspaceId: 'ws_i5xx2bzn3kir2gshyl7sn5pk', organizationId: 'org_pycdybk377oxtzq6svizx3or', limit: 20 }, ctx);
        res.status(200).json(output);
      })().catch(reject);
    });
  // Sequential on purpose: latency of one request, not throughput of many interleaved ones.
  const perRequestUs = async (run: () => Promise<number>, n: number) => {
    const started = performance.now();
    for (let i = 0; i < n; i++) {
      const status = await run();
      if (status !== 200) throw new Error(`the benchmark request answered ${status}: ${answered}`);
    }
    return ((performance.now() - started) * 1000) / n;
  };

  await perRequestUs(routed, warmup); // warm up the JIT on both paths first
  await perRequestUs(direct, warmup);
  const routedUs: number[] = [];
  const directUs: number[] = [];
  const added: number[] = [];
  for (let b = 0; b < batches; b++) {
    // Alternate which runs first so drift within a pair cancels out over the batches.
    const first = b % 2 ? await perRequestUs(direct, perBatch) : await perRequestUs(routed, perBatch);
    const second = b % 2 ? await perRequestUs(routed, perBatch) : await perRequestUs(direct, perBatch);
    const [r, d] = b % 2 ? [second, first] : [first, second];
    routedUs.push(r);
    directUs.push(d);
    added.push(r - d);
  }

  // validateInput alone: a synchronous loop, fresh input each time because Ajv fills defaults in place.
  const n = validations;
  const started = performance.now();
  for (let i = 0; i < n; i++) validateInput('documents.list', { workspaceId: 'ws_i5xx2bzn3kir2gshyl7sn5pk', organizationId: 'org_pycdybk377oxtzq6svizx3or', limit: 20 });
  const validateUs = ((performance.now() - started) * 1000) / n;

  return { routedUs: median(routedUs), directUs: median(directUs), addedUs: median(added), validateUs };
}

if (import.meta.main) {
  const db = await openBenchDatabase();
  try {
    const r = await benchRoutingValidation(db);
    console.log(`routed ${r.routedUs.toFixed(2)} µs, direct ${r.directUs.toFixed(2)} µs, added ${r.addedUs.toFixed(2)} µs (aim <= ${ROUTING_AIM_US}); validateInput alone ${r.validateUs.toFixed(2)} µs`);
  } finally {
    await db.close();
  }
}
