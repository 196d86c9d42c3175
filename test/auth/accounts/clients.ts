/**
 * How the account tests talk to the server: JSON requests, and the two kinds of client the
 * identity routes serve (a browser with the `session` cookie and an Origin, or a bearer client
 * that keeps `set-auth-token`).
 */
import { startTestServer, type TestResponse, type TestServer } from '../../support/server.ts';
import { startSmtpReceiver, type SmtpReceiver } from '../../support/smtp.ts';

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
  return response.headers
    .getSetCookie()
    .filter((line) => line.startsWith('session='))
    .at(-1);
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

export async function signUp(
  server: TestServer,
  fields: { email?: string; name?: string; password?: string; callbackURL?: string } = {},
  headers: Record<string, string> = {},
): Promise<{ response: TestResponse; body: any; email: string }> {
  const email = fields.email ?? uniqueEmail();
  const response = await server.fetch('/api/auth/sign-up/email', post({ name: 'Ada Lovelace', password: PASSWORD, ...fields, email }, headers));
  return { response, body: await response.json(), email };
}

export async function signIn(server: TestServer, email: string, password = PASSWORD, headers: Record<string, string> = {}): Promise<{ response: TestResponse; body: any; token: string }> {
  const response = await server.fetch('/api/auth/sign-in/email', post({ email, password }, headers));
  const body = await response.json();
  return { response, body, token: body?.token };
}

/** A clock the suites move by hand: the server reads `now()`, tests `advance` it. */
export function testClock(start: string): { now(): Date; advance(ms: number): void } {
  let at = new Date(start);
  return {
    now: () => at,
    advance(ms) {
      at = new Date(at.getTime() + ms);
    },
  };
}

/**
 * A server that sends its mail through an SMTP receiver, on the clock `now`; `close` stops both.
 * The identity limits are lifted so suites can sign in as often as they assert.
 */
export async function startMailingServer(env: Record<string, string>, now: () => Date): Promise<{ server: TestServer; smtp: SmtpReceiver; close(): Promise<void> }> {
  const smtp = await startSmtpReceiver();
  const server = await startTestServer({
    env: { AUTH_RATE_LIMIT_PER_MINUTE: '1000', EMAIL_PROVIDER: 'smtp', SMTP_URL: smtp.url, ...env },
    overrides: { now },
  }).catch(async (error: unknown) => {
    await smtp.stop();
    throw error;
  });
  return {
    server,
    smtp,
    async close() {
      await server.close();
      await smtp.stop();
    },
  };
}
