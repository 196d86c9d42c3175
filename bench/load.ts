/**
 * Closed-loop HTTP load generator. It runs as a child process so that the client does not share
 * the server's event loop (in-process, the client's work would be charged to the server).
 * N keep-alive connections each send the next GET as soon as the previous answer is read; only
 * answers completed inside the measured window count. Plain node:http, no undici, so the client
 * side is the same for every target.
 *   node bench/load.ts <url> [connections=32] [warmupMs=1000] [durationMs=5000]
 * Prints one JSON line: LoadResult. Forked with an IPC channel (see runLoad in support.ts), it
 * instead serves one LoadRequest per message, so rounds reuse one warmed-up client process.
 */
import { Agent, get } from 'node:http';

export interface LoadRequest {
  url: string;
  connections: number;
  warmupMs: number;
  durationMs: number;
}

export interface LoadResult {
  /** 200 answers inside the measured window. */
  requests: number;
  /** 200 answers in the whole run, warmup included (to divide the server's CPU time by). */
  total: number;
  errors: number;
  seconds: number;
  rps: number;
  /** This client's CPU time over the window per wall second: near 1 means the client, not the server, was the limit. */
  clientCpu: number;
}

async function load({ url, connections, warmupMs, durationMs }: LoadRequest): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  let measuring = false;
  let stopping = false;
  let requests = 0;
  let total = 0;
  let errors = 0;

  const connection = () =>
    new Promise<void>((resolve) => {
      const next = () => {
        if (stopping) return resolve();
        let settled = false;
        const done = (ok: boolean) => {
          if (settled) return;
          settled = true;
          if (ok) total++;
          if (measuring) {
            if (ok) requests++;
            else errors++;
          }
          next();
        };
        get(url, { agent }, (res) => {
          res
            .on('end', () => done(res.statusCode === 200))
            .on('error', () => done(false))
            .resume();
        }).on('error', () => done(false));
      };
      next();
    });

  const running = Array.from({ length: connections }, connection);
  await new Promise((r) => setTimeout(r, warmupMs));
  measuring = true;
  const started = performance.now();
  const cpu = process.cpuUsage();
  await new Promise((r) => setTimeout(r, durationMs));
  measuring = false;
  const seconds = (performance.now() - started) / 1000;
  const { user, system } = process.cpuUsage(cpu);
  stopping = true;
  await Promise.all(running);
  agent.destroy();
  return { requests, total, errors, seconds, rps: requests / seconds, clientCpu: (user + system) / 1e6 / seconds };
}

if (import.meta.main && process.send) {
  const send = process.send.bind(process);
  process.on('message', (request: LoadRequest) => void load(request).then((result) => send(result)));
} else if (import.meta.main) {
  const [url, connections = '32', warmupMs = '1000', durationMs = '5000'] = process.argv.slice(2);
  if (!url) {
    console.error('usage: node bench/load.ts <url> [connections] [warmupMs] [durationMs]');
    process.exit(2);
  }
  const result = await load({ url, connections: Number(connections), warmupMs: Number(warmupMs), durationMs: Number(durationMs) });
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
