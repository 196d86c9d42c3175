/**
 * The local driver's upload path: 25 MiB through `PUT /uploads/...` (the upload routes on a bare
 * Express app on loopback) against a plain fs stream copy of the same bytes in the same run, with
 * a bare node:http server that pipes the body to a file as a third reference (what HTTP over
 * loopback costs by itself). The client is a child process, so the server's memory and CPU are
 * measured apart. Reports the throughput ratio upload/copy (median of per-round ratios, order
 * rotating), the same by CPU per MiB, and the server process's peak RSS growth during an upload.
 * A measurement, not a test: nothing fails when a figure misses its aim.
 *   node bench/upload.ts
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import express from 'express';
import { requestId } from '../src/http/request-id.ts';
import { createLogger } from '../src/logger.ts';
import { LocalDriver } from '../src/storage/local-driver.ts';
import { uploadRoutes } from '../src/storage/upload-routes.ts';
import { forkWorker, type ChildWorker } from './child.ts';
import { median } from './statistics.ts';

export const UPLOAD_AIM = { ratio: 0.8, rssGrowthMiB: 30 };
const SIZE = 25 * 1024 * 1024;
const MIB = SIZE / 2 ** 20;
const CHUNK = 64 * 1024;
const CLIENT_FLAG = '--upload-client';

export interface UploadBenchResult {
  /** Medians of the rounds, MiB/s. */
  uploadMiBps: number;
  bareMiBps: number;
  copyMiBps: number;
  /** Median of per-round upload/copy throughput ratios. */
  ratio: number;
  /** Median of per-round upload/bare node:http throughput ratios. */
  ratioToBare: number;
  /**
   * CPU time of this process per MiB (medians; libuv's thread pool included): the server's for an
   * upload, the copy's for a copy. Wall-clock throughput drifts with the scheduler on a busy
   * machine; CPU per byte says what each path costs.
   */
  uploadCpuMsPerMiB: number;
  copyCpuMsPerMiB: number;
  /** Largest RSS growth of this (server) process seen during any upload, in MiB. */
  peakRssGrowthMiB: number;
}

interface ClientRequest {
  url: string;
  headers: Record<string, string>;
  file: string;
}
interface ClientAnswer {
  status: number;
  ms: number;
}
interface Measured {
  ms: number;
  cpuMs: number;
  rssGrowthMiB: number;
}
type Path = 'upload' | 'bare' | 'copy';

export async function benchUpload({ rounds = 7 } = {}): Promise<UploadBenchResult> {
  const dir = await mkdtemp(join(tmpdir(), 'workspace-api-bench-upload-'));
  const source = join(dir, 'source.bin');
  // Written in pieces: a 25 MiB buffer would inflate this process's memory before it is measured.
  const file = createWriteStream(source);
  for (let written = 0; written < SIZE; written += 2 ** 20) if (!file.write(randomBytes(2 ** 20))) await once(file, 'drain');
  file.end();
  await once(file, 'finish');

  const app = express();
  app.set('etag', false);
  const server = await listening(app.listen(0, '127.0.0.1'));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const secret = randomBytes(32).toString('hex');
  const driver = new LocalDriver({ dataDir: dir, publicUrl: origin, secret });
  app.use(requestId(createLogger('silent')));
  app.use(uploadRoutes({ driver, secret, maxUploadBytes: SIZE, now: () => new Date(), describe: async () => ({ name: 'bench.bin', contentType: 'application/octet-stream', status: 'pending' as const }) }));

  let bareFiles = 0;
  const bare = await listening(
    createServer((req, res) => {
      const target = join(dir, `bare-${bareFiles++}.bin`);
      pipeline(req, createWriteStream(target, { highWaterMark: 2 ** 20 }))
        .then(() => rm(target))
        .then(
          () => res.end(),
          (error: unknown) => {
            res.statusCode = 500;
            res.end(String(error));
          },
        );
    }).listen(0, '127.0.0.1'),
  );
  const bareUrl = `http://127.0.0.1:${(bare.address() as AddressInfo).port}/`;

  const client = startClient();
  /** CPU and peak RSS of this process around one transfer. */
  const measure = async (work: () => Promise<number | undefined>): Promise<Measured> => {
    const baseline = process.memoryUsage.rss();
    let peak = baseline;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage.rss());
    }, 5);
    const cpu = process.cpuUsage();
    const started = performance.now();
    try {
      const clientMs = await work();
      const used = process.cpuUsage(cpu);
      peak = Math.max(peak, process.memoryUsage.rss());
      return { ms: clientMs ?? performance.now() - started, cpuMs: (used.user + used.system) / 1000, rssGrowthMiB: (peak - baseline) / 2 ** 20 };
    } finally {
      clearInterval(sampler);
    }
  };
  const put = async (url: string, headers: Record<string, string>) => {
    const answer = await client.run({ url, headers, file: source });
    if (answer.status !== 200) throw new Error(`the PUT answered ${answer.status}`);
    return answer.ms;
  };
  const paths: Record<Path, (i: number) => Promise<Measured>> = {
    async upload(i) {
      const key = `org_bench/doc_${i}`;
      const { url, headers } = await driver.presignUpload(key, { contentType: 'application/octet-stream', size: SIZE, expiresInSeconds: 600, now: new Date() });
      const measured = await measure(() => put(url, headers));
      // The PUT lands in the staging path; the commit (documents.complete's step) moves it into place.
      if ((await driver.commitUpload(key))?.size !== SIZE) throw new Error('the upload did not store every byte');
      await driver.delete(key);
      return measured;
    },
    bare: () => measure(() => put(bareUrl, { 'content-type': 'application/octet-stream', 'content-length': String(SIZE) })),
    async copy(i) {
      const target = join(dir, `copy-${i}.bin`);
      const measured = await measure(async () => {
        await pipeline(createReadStream(source, { highWaterMark: CHUNK }), createWriteStream(target));
        return undefined;
      });
      await rm(target);
      return measured;
    },
  };

  const all: Record<Path, Measured[]> = { upload: [], bare: [], copy: [] };
  const ratios: number[] = [];
  const ratiosToBare: number[] = [];
  const mibps = (m: Measured) => MIB / (m.ms / 1000);
  try {
    for (const path of ['copy', 'bare', 'upload'] as const) await paths[path](0); // untimed warm-up
    const orders: Path[][] = [
      ['copy', 'bare', 'upload'],
      ['upload', 'copy', 'bare'],
      ['bare', 'upload', 'copy'],
    ];
    for (let round = 1; round <= rounds; round++) {
      const got = {} as Record<Path, Measured>;
      for (const path of orders[round % orders.length]!) got[path] = await paths[path](round);
      for (const path of ['upload', 'bare', 'copy'] as const) all[path].push(got[path]);
      ratios.push(got.copy.ms / got.upload.ms);
      ratiosToBare.push(got.bare.ms / got.upload.ms);
      console.log(
        `  upload round ${round}: PUT /uploads ${mibps(got.upload).toFixed(0)} MiB/s (server cpu ${(got.upload.cpuMs / MIB).toFixed(2)} ms/MiB, ` +
          `rss +${got.upload.rssGrowthMiB.toFixed(1)} MiB), bare node:http ${mibps(got.bare).toFixed(0)} MiB/s, ` +
          `fs copy ${mibps(got.copy).toFixed(0)} MiB/s (cpu ${(got.copy.cpuMs / MIB).toFixed(2)} ms/MiB); upload/copy ${ratios.at(-1)!.toFixed(2)}`,
      );
    }
  } finally {
    client.close();
    for (const s of [server, bare]) {
      s.closeAllConnections();
      s.close();
    }
    await rm(dir, { recursive: true, force: true });
  }
  return {
    uploadMiBps: median(all.upload.map(mibps)),
    bareMiBps: median(all.bare.map(mibps)),
    copyMiBps: median(all.copy.map(mibps)),
    ratio: median(ratios),
    ratioToBare: median(ratiosToBare),
    uploadCpuMsPerMiB: median(all.upload.map((m) => m.cpuMs / MIB)),
    copyCpuMsPerMiB: median(all.copy.map((m) => m.cpuMs / MIB)),
    peakRssGrowthMiB: Math.max(...all.upload.map((m) => m.rssGrowthMiB)),
  };
}

/** Runs the benchmark and answers bench/index.ts's table rows. */
export async function uploadRows(): Promise<string[][]> {
  console.log('upload, 25 MiB PUT /uploads (local driver, child-process client) vs fs stream copy:');
  const r = await benchUpload();
  return [
    ['upload 25 MiB/s PUT / fs copy (median of rounds)', `${r.ratio.toFixed(2)}  (${r.uploadMiBps.toFixed(0)} / ${r.copyMiBps.toFixed(0)} MiB/s)`, `>= ${UPLOAD_AIM.ratio}`],
    ['  same, by CPU per MiB (copy/upload)', `${(r.copyCpuMsPerMiB / r.uploadCpuMsPerMiB).toFixed(2)}  (${r.copyCpuMsPerMiB.toFixed(2)} / ${r.uploadCpuMsPerMiB.toFixed(2)} ms)`, `>= ${UPLOAD_AIM.ratio}`],
    ['  PUT / bare node:http to a file', `${r.ratioToBare.toFixed(2)}  (${r.uploadMiBps.toFixed(0)} / ${r.bareMiBps.toFixed(0)} MiB/s)`, ''],
    ['  server peak RSS growth during an upload', `${r.peakRssGrowthMiB.toFixed(1)} MiB`, `< ${UPLOAD_AIM.rssGrowthMiB} MiB`],
  ];
}

async function listening(server: Server): Promise<Server> {
  if (!server.listening) await once(server, 'listening');
  return server;
}

/** This file again, in a child process, as the uploading client. */
function startClient(): ChildWorker<ClientRequest, ClientAnswer> {
  return forkWorker(fileURLToPath(import.meta.url), [CLIENT_FLAG], 'the upload client');
}

/** The client's side: streams the file as the PUT body with exactly the given headers. */
function clientUpload({ url, headers, file }: ClientRequest): Promise<ClientAnswer> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = request(url, { method: 'PUT', headers }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, ms: performance.now() - started }));
    });
    req.on('error', reject);
    pipeline(createReadStream(file, { highWaterMark: CHUNK }), req).catch(reject);
  });
}

if (import.meta.main && process.argv.includes(CLIENT_FLAG)) {
  const send = process.send!.bind(process);
  process.on('message', (message: ClientRequest) => {
    clientUpload(message).then(
      (answer) => send(answer),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  });
} else if (import.meta.main) {
  const r = await benchUpload();
  console.log(
    `PUT /uploads ${r.uploadMiBps.toFixed(0)} MiB/s, bare node:http ${r.bareMiBps.toFixed(0)} MiB/s, fs copy ${r.copyMiBps.toFixed(0)} MiB/s; ` +
      `upload/copy ${r.ratio.toFixed(2)} (aim >= ${UPLOAD_AIM.ratio}), upload/bare ${r.ratioToBare.toFixed(2)}; ` +
      `cpu per MiB upload ${r.uploadCpuMsPerMiB.toFixed(2)} ms, copy ${r.copyCpuMsPerMiB.toFixed(2)} ms; ` +
      `server peak RSS growth ${r.peakRssGrowthMiB.toFixed(1)} MiB (aim < ${UPLOAD_AIM.rssGrowthMiB} MiB)`,
  );
}
