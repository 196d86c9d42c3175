/**
 * How the account tests talk to the server: JSON requests, and the two kinds of client the
 * identity routes serve (a browser with the `session` cookie and an Origin, or a bearer client
 * that keeps `set-auth-token`).
 */
import type { TestResponse, TestServer } from '../../support/server.ts';

export const PASSWORD = 'correct horse battery staple';

export function post(body?: unknown, headers: Record<string, string> = {}): RequestInit {
  return {
    method: 'POST',
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  };
}

export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

/** The `session` Set-Cookie line of a response, if any (the last one wins, as in a browser). */
export function sessionCookie(response: Response): string | undefined {
  return response.headers.getSetCookie().filter((line) => line.startsWith('session=')).at(-1);
}

/** The value a browser would store from a session Set-Cookie line. */
export function cookieValue(line: string): string {
  return decodeURIComponent(line.slice('session='.length).split(';')[0]!);
}

let counter = 0;
export function uniqueEmail(prefix = 'user'): string {
  counter += 1;
  return `${prefix}-${process.pid}-${counter}-${Math.random().toString(36).slice(2, 8)}@example.com`;
}

export async function signUp(server: TestServer, fields: { email?: string; name?: string; password?: string; callbackURL?: string } = {}, headers: Record<string, string> = {}): Promise<{ response: TestResponse; body: any; email: string }> {
  const email = fields.email ?? uniqueEmail();
  const response = await server.fetch('/api/auth/sign-up/email', post({ name: 'Ada Lovelace', password: PASSWORD, ...fields, email }, headers));
  return { response, body: await response.json(), email };
}

export async function signIn(server: TestServer, email: string, password = PASSWORD, headers: Record<string, string> = {}): Promise<{ response: TestResponse; body: any; token: string }> {
  const response = await server.fetch('/api/auth/sign-in/email', post({ email, password }, headers));
  const body = await response.json();
  return { response, body, token: body?.token };
}
