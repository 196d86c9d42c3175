/**
 * Loopback ports: one free at the time of the call (taken and released at once), for a process
 * about to listen on it, or left unused, as an unreachable service's address.
 */
import { once } from 'node:events';
import { createServer } from 'node:net';

/** A loopback port nothing listens on once this resolves. */
export async function freePort(): Promise<number> {
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** A loopback port nothing listens on: an unreachable service's address. */
export const closedPort = freePort;
