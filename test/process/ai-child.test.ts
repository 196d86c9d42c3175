// `serve` runs the companion AI service as a child process: on loopback, behind a key it made for
// it, started again when it dies, and stopped with the API. The API keeps answering throughout.
import { rm } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migratedDataDir } from '../support/database.ts';
import { alive, serveProcess, type ServedProcess } from '../support/serve-process.ts';

let dataDir: string;
let served: ServedProcess;

beforeAll(async () => {
  dataDir = await migratedDataDir();
  // HOST is opened to every interface: the AI service must stay on loopback all the same.
  served = await serveProcess({ DATA_DIR: dataDir, HOST: '0.0.0.0', AI_API_KEY: '' });
}, 90_000);

afterAll(async () => {
  await served?.kill();
  await rm(dataDir, { recursive: true, force: true });
});

/** Polls until `check` holds; each step waits for an answer, the loop is bounded. */
async function eventually(check: () => Promise<boolean> | boolean, what: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (await check()) return;
    await delay(50);
  }
  throw new Error(`never: ${what}`);
}

describe('serve and its AI service', () => {
  it('runs the AI service in another process, on loopback, and only for callers with the key it generated', { timeout: 60_000 }, async () => {
    const api = await served.logged('listening');
    const ai = await served.logged('AI service process started');
    expect(ai.pid).toEqual(expect.any(Number));
    expect(ai.pid).not.toBe(served.child.pid);
    expect((await served.logged('AI service listening')).apiKey).toBe(true);
    const url = new URL(api.ai as string);
    expect(url.hostname).toBe('127.0.0.1');
    expect((await fetch(`${url.origin}/health`)).status).toBe(200);
    const refused = await fetch(`${url.origin}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"input":"hi"}' });
    expect(refused.status).toBe(401);
    // The API's own client has the key: its system status reaches the service.
    expect((await fetch(`http://127.0.0.1:${served.port}/healthz`)).status).toBe(200);
  });

  it('starts the AI service again when it dies, on the same address, while the API keeps answering', { timeout: 60_000 }, async () => {
    const first = await served.logged('AI service process started');
    process.kill(first.pid as number, 'SIGKILL');
    expect((await fetch(`http://127.0.0.1:${served.port}/healthz`)).status).toBe(200);
    await served.logged('the AI service exited; starting it again');
    const second = await served.logged('AI service process started', 2);
    expect(second.pid).not.toBe(first.pid);
    expect(second.url).toBe(first.url);
    await eventually(async () => (await fetch(`${second.url as string}/health`).catch(() => null))?.status === 200, 'the new AI service answers');
  });

  it('stops the AI service with the API on SIGTERM', { timeout: 60_000 }, async () => {
    const current = await served.logged('AI service process started', 2);
    served.child.kill('SIGTERM');
    const [code] = await served.exited;
    expect(code).toBe(0);
    await eventually(() => !alive(current.pid as number), 'the AI service process has exited');
  });
});
