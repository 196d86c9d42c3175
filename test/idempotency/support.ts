/**
 * Plain HTTP calls of the idempotent operations, over REST or RPC, with or without an
 * Idempotency-Key: the tests look at the raw status, headers and body text, which a typed client
 * would hide. Every answer still goes through the test server's contract check.
 */
import { randomUUID } from 'node:crypto';
import { procedures, type ProcedureName } from '../../generated/procedures.ts';
import { restRequest } from '../support/example-inputs.ts';
import type { TestResponse, TestServer } from '../support/server.ts';

export type Transport = 'rest' | 'rpc';

export interface CallOptions {
  key?: string;
  /** Extra request headers (a session: `user.headers`). */
  headers?: Record<string, string>;
}

export interface Answer {
  status: number;
  /** The body as sent, for byte-for-byte comparisons. */
  text: string;
  body: any;
  /** The Idempotent-Replayed header, or null. */
  replayed: string | null;
  response: TestResponse;
}

export async function call(server: TestServer, transport: Transport, operation: string, input: Record<string, unknown>, options: CallOptions = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers, ...(options.key === undefined ? {} : { 'idempotency-key': options.key }) };
  let response: TestResponse;
  if (transport === 'rpc') {
    response = await server.fetch(`/rpc/${operation.replace(/\./g, '/')}`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ json: input }),
    });
  } else {
    // The route from the generated table, as the REST router registers it.
    const { path, init } = restRequest(procedures[operation as ProcedureName], input);
    response = await server.fetch(path, { ...init, headers: { ...headers, ...(init.headers as Record<string, string> | undefined) } });
  }
  const text = await response.text();
  return { status: response.status, text, body: text === '' ? undefined : JSON.parse(text), replayed: response.headers.get('idempotent-replayed'), response };
}

/** The answer's payload: REST's body, or RPC's `json`. */
export function payload(transport: Transport, answer: Answer): any {
  return transport === 'rpc' && answer.status < 300 ? answer.body.json : answer.body;
}

export const newKey = (): string => randomUUID();

let slugs = 0;
export const slug = (prefix = 'idem'): string => `${prefix}-${process.pid}-${++slugs}`;
