/**
 * Starts Prism on a free loopback port: the contract's mock for the black-box suite, or a
 * validating proxy in front of the real server for the prism-proxy suite.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort } from './ports.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

export interface PrismProcess {
  origin: string;
  close(): Promise<void>;
}

/** The Prism mock of the committed contract (`make mock`). */
export async function startPrism(): Promise<PrismProcess> {
  return spawnPrism(['mock', 'generated/openapi.json']);
}

/**
 * Prism as a validating proxy in front of a real server: `prism proxy <document> <upstream> --errors`.
 * It checks each request and each upstream answer against `document` and reports what breaks it in
 * an `sl-violations` response header; with --errors a request that breaks the contract is answered
 * by Prism itself (422, or 401 when the security requirement is not met) and an answer that breaks
 * it becomes a 500. `upstream` is the server's base URL including its prefix
 * (`http://127.0.0.1:PORT/api/v1`): Prism matches paths without the servers prefix (toolchain.md).
 */
export async function startPrismProxy(document: string, upstream: string): Promise<PrismProcess> {
  return spawnPrism(['proxy', document, upstream, '--errors']);
}

async function spawnPrism(args: string[]): Promise<PrismProcess> {
  const port = await freePort();
  const child = spawn(`${root}node_modules/.bin/prism`, [...args, '-h', '127.0.0.1', '-p', String(port)], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const onData = (chunk: Buffer) => {
    output += chunk.toString('utf8');
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Prism did not start in 60 s:\n${output}`)), 60_000);
    const onReady = () => {
      if (output.includes('Prism is listening')) {
        clearTimeout(timer);
        child.stdout.off('data', onReady);
        child.stderr.off('data', onReady);
        child.off('exit', onExit);
        resolve();
      }
    };
    const onExit = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`Prism exited with ${code}:\n${output}`));
    };
    child.stdout.on('data', onReady);
    child.stderr.on('data', onReady);
    child.once('exit', onExit);
  });
  return {
    origin: `http://127.0.0.1:${port}`,
    async close() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
    },
  };
}
