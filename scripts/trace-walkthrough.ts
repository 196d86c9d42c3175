/**
 * The trace of docs/observability.md, taken from a real run: `node src/main.ts serve` (its inline
 * worker and its AI service child) on a fresh embedded database, exporting over OTLP/HTTP (JSON) to
 * a receiver in this process, while this script walks the README's document path as a client
 * would: sign up, an organization, a workspace, createUpload, the PUT, complete, a document.index
 * job followed until it succeeds, a search. Then `serve` stops (its last spans are exported as it
 * exits) and the script prints each trace as an indented tree and writes it as a picture,
 * docs/observability-trace.svg: one row per span on a shared time axis, the job's run beside the
 * request that created it (a link, drawn dashed). Statements (db.query) are counted on their
 * transaction's row rather than drawn.
 *   node scripts/trace-walkthrough.ts [--svg <path>]
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startOtlpReceiver, type ReceivedSpan } from '../test/support/otlp-receiver.ts';
import { freePort } from '../test/support/ports.ts';
import { serveProcess } from '../test/support/serve-process.ts';

const root = fileURLToPath(new URL('../', import.meta.url));
const { values } = parseArgs({ options: { svg: { type: 'string', default: join(root, 'docs/observability-trace.svg') } } });

const TEXT = `# Mill notes\n\n${'The mill on the river grinds wheat into flour every morning, and the miller keeps a ledger of every sack. '.repeat(30)}`;

const receiver = await startOtlpReceiver();
const dataDir = await mkdtemp(join(tmpdir(), 'workspace-api-trace-'));
// A port known beforehand: the upload addresses the service signs name its PUBLIC_URL.
const port = await freePort();
const service = await serveProcess({
  ...receiver.env,
  OTEL_BSP_SCHEDULE_DELAY: '500',
  DATA_DIR: dataDir,
  SECRET: 'trace-walkthrough-secret-0123456789abcdef',
  PORT: String(port),
  PUBLIC_URL: `http://127.0.0.1:${port}`,
});
const base = `http://127.0.0.1:${service.port}`;
try {
  await until(async () => (await fetch(`${base}/readyz`)).status === 200);
  const call = async <T = { id: string }>(method: string, path: string, body?: unknown, token?: string): Promise<T> => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(token ? { authorization: `Bearer ${token}` } : {}) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  };
  const { token } = await call<{ token: string }>('POST', '/api/auth/sign-up/email', { name: 'Ada Lovelace', email: 'ada@example.com', password: 'correct horse battery' });
  const org = await call('POST', '/api/auth/organization/create', { name: 'Analytical Engines', slug: 'analytical-engines' }, token);
  const workspace = await call('POST', '/api/v1/workspaces', { organizationId: org.id, name: 'Research', slug: 'research' }, token);
  const { document, upload } = await call<{ document: { id: string }; upload: { url: string; headers: Record<string, string> } }>(
    'POST',
    '/api/v1/documents',
    { organizationId: org.id, workspaceId: workspace.id, name: 'mill.md', contentType: 'text/markdown', size: Buffer.byteLength(TEXT) },
    token,
  );
  const put = await fetch(upload.url, { method: 'PUT', headers: upload.headers, body: TEXT });
  if (put.status !== 200) throw new Error(`PUT: ${put.status}`);
  await call('POST', `/api/v1/documents/${document.id}/complete`, {}, token);
  const job = await call('POST', '/api/v1/jobs', { organizationId: org.id, kind: 'document.index', documentId: document.id }, token);
  await until(async () => (await call<{ status: string }>('GET', `/api/v1/jobs/${job.id}`, undefined, token)).status === 'succeeded', 120_000);
  await call('POST', `/api/v1/workspaces/${workspace.id}/documents/search`, { query: 'miller ledger of sacks', limit: 3 }, token);
} finally {
  service.child.kill('SIGTERM');
  await service.exited;
  await rm(dataDir, { recursive: true, force: true });
}
await receiver.close();

// The traces of the path, in the order they began: each request, and the job's run.
const interesting = ['documents.createUpload', 'PUT /uploads/:organizationId/:documentId', 'documents.complete', 'jobs.create', 'documents.search'];
const spans = receiver.spans;
const roots = spans.filter((span) => span.parentSpanId === undefined && (interesting.includes(span.name) || span.name.startsWith('job.run'))).sort((a, b) => (a.startNs < b.startNs ? -1 : 1));
const childrenOf = (span: ReceivedSpan) => spans.filter((other) => other.traceId === span.traceId && other.parentSpanId === span.spanId).sort((a, b) => (a.startNs < b.startNs ? -1 : 1));
const ms = (span: ReceivedSpan) => Number(span.endNs - span.startNs) / 1e6;

interface Row {
  span: ReceivedSpan;
  depth: number;
  queries: number;
}
const rows: Row[] = [];
const walk = (span: ReceivedSpan, depth: number) => {
  const children = childrenOf(span);
  const queries = children.filter((child) => child.name === 'db.query').length;
  rows.push({ span, depth, queries });
  for (const child of children) if (child.name !== 'db.query') walk(child, depth + 1);
};
for (const rootSpan of roots) walk(rootSpan, 0);

const detail = (span: ReceivedSpan) => {
  const keep = ['http.response.status_code', 'job.kind', 'job.attempt', 'ai.embed.texts', 'ai.embed.batch.texts', 'app.storage.bytes', 'ai.extract.characters', 'db.response.returned_rows'];
  return keep
    .filter((key) => span.attributes[key] !== undefined)
    .map((key) => `${key}=${String(span.attributes[key])}`)
    .join(' ');
};
for (const row of rows) {
  const linked = row.span.links.length > 0 ? `  (linked to trace ${row.span.links[0]!.traceId.slice(0, 8)}…)` : '';
  const trace = row.depth === 0 ? `trace ${row.span.traceId.slice(0, 8)}… ` : '';
  console.log(`${'  '.repeat(row.depth)}${trace}${row.span.name} [${row.span.service}] ${ms(row.span).toFixed(1)} ms${row.queries ? `, ${row.queries} statements` : ''} ${detail(row.span)}${linked}`);
}

// The picture: rows on one time axis from the first span of the path to the last.
const start = rows.reduce((min, row) => (row.span.startNs < min ? row.span.startNs : min), rows[0]!.span.startNs);
const end = rows.reduce((max, row) => (row.span.endNs > max ? row.span.endNs : max), rows[0]!.span.endNs);
const total = Number(end - start) / 1e6;
const [labelWidth, barWidth, rowHeight] = [430, 620, 18];
const x = (ns: bigint) => labelWidth + (Number(ns - start) / 1e6 / total) * barWidth;
const colours: Record<string, string> = { 'workspace-api': '#4e79a7', 'workspace-api-ai': '#e15759', 'workspace-api-worker': '#59a14f' };
const colour = (span: ReceivedSpan) => (span.name.startsWith('job.run') ? '#59a14f' : (colours[span.service] ?? '#9c755f'));
const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const height = rows.length * rowHeight + 60;
const svg = [
  `<svg xmlns="http://www.w3.org/2000/svg" width="${labelWidth + barWidth + 90}" height="${height}" font-family="monospace" font-size="11">`,
  `<rect width="100%" height="100%" fill="white"/>`,
  `<text x="10" y="16" font-size="12">One run of the document path: ${roots.length} traces, ${spans.length} spans (db.query counted on its transaction), ${total.toFixed(0)} ms from first to last</text>`,
  ...rows.flatMap((row, i) => {
    const y = 30 + i * rowHeight;
    const left = x(row.span.startNs);
    const width = Math.max(1.5, x(row.span.endNs) - left);
    const label = `${'  '.repeat(row.depth)}${row.span.name}${row.queries ? ` (${row.queries} stmts)` : ''}`;
    return [
      ...(row.depth === 0 && i > 0 ? [`<line x1="0" x2="${labelWidth + barWidth + 90}" y1="${y - 2}" y2="${y - 2}" stroke="#ddd"/>`] : []),
      `<text x="10" y="${y + 11}" xml:space="preserve">${escape(label.slice(0, 62))}</text>`,
      `<rect x="${left.toFixed(1)}" y="${y + 2}" width="${width.toFixed(1)}" height="${rowHeight - 6}" fill="${colour(row.span)}"${row.span.status.code === 2 ? ' stroke="black"' : ''}/>`,
      `<text x="${(left + width + 3).toFixed(1)}" y="${y + 11}" fill="#555">${ms(row.span).toFixed(1)} ms</text>`,
    ];
  }),
  // The job's run points back at the request that created it: a dashed link.
  ...rows.flatMap((row, i) =>
    row.span.links.flatMap((link) => {
      const target = rows.findIndex((other) => other.depth === 0 && other.span.traceId === link.traceId);
      if (target < 0) return [];
      const [y1, y2] = [30 + target * rowHeight + 9, 30 + i * rowHeight + 9];
      return [`<path d="M ${labelWidth - 6} ${y1} C ${labelWidth - 30} ${y1}, ${labelWidth - 30} ${y2}, ${labelWidth - 6} ${y2}" fill="none" stroke="#59a14f" stroke-dasharray="4 3"/>`];
    }),
  ),
  `<text x="10" y="${height - 12}" fill="#555">blue: the API and its worker; green: the job's run (a trace of its own); red: the AI service; dashed: the run's link to the request that created it</text>`,
  '</svg>',
].join('\n');
await writeFile(values.svg, svg + '\n');
console.log(`\nwrote ${values.svg}`);

async function until(done: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await done()) return;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
