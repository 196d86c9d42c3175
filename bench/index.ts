/**
 * `npm run bench`: both benchmarks on one migrated embedded database (opening it costs ~5 s, so it
 * is shared), the upload and the start-up benchmarks (start.ts spawns `node src/main.ts serve`
 * itself), then a table of each figure beside its aim. A measurement, not a test: nothing
 * fails when a figure misses its aim.
 */
import { availableParallelism } from 'node:os';
import { benchHealthVsBare, HEALTH_AIM } from './health-vs-bare.ts';
import { benchRoutingValidation, ROUTING_AIM_US } from './routing-validation.ts';
import { openBenchDatabase } from './support.ts';

const started = performance.now();
console.log(`Node ${process.version}, ${availableParallelism()} CPUs; NODE_ENV=production, LOG_LEVEL=silent`);
const db = await openBenchDatabase();
try {
  console.log('system.health, full stack vs bare node:http (32 connections, child-process client):');
  const health = await benchHealthVsBare(db);
  console.log('routing + validation, documents.list in process:');
  const routing = await benchRoutingValidation(db);

  const rows = [
    ['measure', 'result', 'aim'],
    ['health req/s full / bare (median of rounds)', `${health.ratio.toFixed(2)}  (${Math.round(health.fullRps)} / ${Math.round(health.bareRps)})`, `>= ${HEALTH_AIM}`],
    ['  same, by server CPU per request (bare/full)', `${(health.bareCpuUs / health.fullCpuUs).toFixed(2)}  (${health.bareCpuUs.toFixed(0)} / ${health.fullCpuUs.toFixed(0)} µs)`, `>= ${HEALTH_AIM}`],
    ['routing + validation added latency', `${routing.addedUs.toFixed(1)} µs  (${routing.routedUs.toFixed(1)} - ${routing.directUs.toFixed(1)})`, `<= ${ROUTING_AIM_US} µs`],
    ['  of which validateInput alone', `${routing.validateUs.toFixed(1)} µs`, ''],
    ...(await import('./upload.ts').then((upload) => upload.uploadRows())), // 25 MiB PUT /uploads vs fs copy (bench/upload.ts)
    ...(await import('./start.ts').then((start) => start.startRows())), // `serve` to /readyz: fresh, restart, without template (bench/start.ts)
  ];
  const widths = [0, 1].map((i) => Math.max(...rows.map((row) => row[i]!.length)));
  console.log();
  for (const row of rows) console.log(row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ').trimEnd());
} finally {
  await db.close();
}
console.log(`\n(${((performance.now() - started) / 1000).toFixed(0)} s)`);
