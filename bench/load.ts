/**
 * Closed-loop HTTP load generator. It runs as a child process so that the client does not share
 * the server's event loop (in-process, the client's work would be charged to the server).
 * N keep-alive connections each send the next GET as soon as the previous answer is read; only
 * answers completed inside the measured window count. Plain node:http, no undici, so the client
 * side is the same for every target.
 *   node bench/load.ts <url> [connections=32] [warmupMs=1000] [durationMs=5000]
 * Prints one JSON line: LoadResult.
 */
import { Agent, get } from 'node:http';

export interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
}

async function load(url: string, connections: number, warmupMs: number, durationMs: number): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  let measuring = false;
  let stopping = false;
  let requests = 0;
  let errors = 0;

  const connection = () => new Promise<void>((resolve) => {
    const next = () => {
      if (stopping) return resolve();
      let settled = false;
      const done = (ok: boolean) => {
        if (settled) return;
        settled = true;
        if (measuring) {
          if (ok) requests++;
          else errors++;
        }
        next();
      };
      get(url, { agent }, (res) => {
        res.on('end', () => done(res.statusCode === 200)).on('error', () => done(false)).resume();
      }).on('error', () => done(false));
    };
    next();
  });

  const running = Array.from({ length: connections }, connection);
  await new Promise((r) => setTimeout(r, warmupMs));
  measuring = true;
  const started = performance.now();
  await new Promise((r) => setTimeout(r, durationMs));
  measuring = false;
  const seconds = (performance.now() - started) / 1000;
  stopping = true;
  await Promise.all(running);
  agent.destroy();
  return { requests, errors, seconds, rps: requests / seconds };
}

if (import.meta.main) {
  const [url, connections = '32', warmupMs = '1000', durationMs = '5000'] = process.argv.slice(2);
  if (!url) {
    console.error('usage: node bench/load.ts <url> [connections] [warmupMs] [durationMs]');
    process.exit(2);
  }
  const result = await load(url, Number(connections), Number(warmupMs), Number(durationMs));
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
