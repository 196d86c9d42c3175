/** A loopback port nothing listens on (taken and released at once): an unreachable service's address. */
import { createServer } from 'node:net';

export async function closedPort(): Promise<number> {
  const probe = createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => probe.once('listening', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}
