/**
 * A receiver of OTLP/HTTP traces inside a test (issue 41): a local HTTP server that takes what the
 * Node SDK's exporter posts to /v1/traces as JSON (OTEL_EXPORTER_OTLP_PROTOCOL=http/json) and
 * keeps every span, flattened, with its service's name. `env` is what makes a process export to it.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, unknown>;
  /** A link's attributes are there only when it has some (job.link on a job run's links). */
  links: { traceId: string; spanId: string; attributes?: Record<string, unknown> }[];
  events: { name: string; attributes: Record<string, unknown> }[];
  status: { code?: number; message?: string };
}

export interface OtlpReceiver {
  url: string;
  /** The variables that make the Node SDK export every span here, promptly. */
  env: Record<string, string>;
  spans: ReceivedSpan[];
  /** Every request body as it came (unzipped, if gzipped): to check what never reaches an exporter. */
  raw: string[];
  /** Waits until `predicate` holds for the spans received so far (polling), and answers them. */
  until(predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number; arrayValue?: { values?: OtlpValue[] } };
type OtlpAttribute = { key: string; value: OtlpValue };
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes?: OtlpAttribute[];
  links?: { traceId: string; spanId: string; attributes?: OtlpAttribute[] }[];
  events?: { name: string; attributes?: OtlpAttribute[] }[];
  status?: { code?: number; message?: string };
}
interface OtlpExport {
  resourceSpans?: { resource?: { attributes?: OtlpAttribute[] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[];
}

function valueOf(value: OtlpValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(valueOf);
  return undefined;
}

function attributesOf(attributes: OtlpAttribute[] | undefined): Record<string, unknown> {
  return Object.fromEntries((attributes ?? []).map((attribute) => [attribute.key, valueOf(attribute.value)]));
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const raw: string[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const bytes = Buffer.concat(chunks);
      // OTEL_EXPORTER_OTLP_COMPRESSION=gzip, should the environment ask for it.
      const body = (request.headers['content-encoding'] === 'gzip' ? gunzipSync(bytes) : bytes).toString('utf8');
      raw.push(body);
      if (request.url === '/v1/traces') {
        const exported = JSON.parse(body) as OtlpExport;
        for (const resourceSpans of exported.resourceSpans ?? []) {
          const name = attributesOf(resourceSpans.resource?.attributes)['service.name'];
          const service = typeof name === 'string' ? name : '';
          for (const scope of resourceSpans.scopeSpans ?? [])
            for (const span of scope.spans ?? [])
              spans.push({
                service,
                traceId: span.traceId,
                spanId: span.spanId,
                parentSpanId: span.parentSpanId || undefined,
                name: span.name,
                kind: span.kind,
                startNs: BigInt(span.startTimeUnixNano),
                endNs: BigInt(span.endTimeUnixNano),
                attributes: attributesOf(span.attributes),
                links: (span.links ?? []).map((link) => ({
                  traceId: link.traceId,
                  spanId: link.spanId,
                  ...(link.attributes?.length ? { attributes: attributesOf(link.attributes) } : {}),
                })),
                events: (span.events ?? []).map((event) => ({ name: event.name, attributes: attributesOf(event.attributes) })),
                status: span.status ?? {},
              });
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_TRACES_SAMPLER: 'always_on', OTEL_BSP_SCHEDULE_DELAY: '100' },
    spans,
    raw,
    async until(predicate, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(spans)) {
        if (Date.now() > deadline) throw new Error(`the spans expected did not arrive within ${timeoutMs} ms; received: ${spans.map((span) => span.name).join(', ')}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return spans;
    },
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

/** The spans below `root` in its trace (children, their children...), not `root` itself. */
export function descendantsOf(spans: ReceivedSpan[], root: ReceivedSpan): ReceivedSpan[] {
  const found: ReceivedSpan[] = [];
  let frontier = [root.spanId];
  while (frontier.length > 0) {
    const next = spans.filter((span) => span.traceId === root.traceId && span.parentSpanId !== undefined && frontier.includes(span.parentSpanId));
    found.push(...next);
    frontier = next.map((span) => span.spanId);
  }
  return found;
}
