/**
 * The tight identity budget (identity.sensitive) cannot be walked around by spelling a path another
 * way: the identity router matches paths whatever their case, so `/Api/Auth/Request-Password-Reset`
 * once had a budget of its own (issue 23: answered 25 times in a row where the canonical path
 * answered 429 after 10). Every spelling of a sensitive route (case, trailing slash, escaped
 * letters, doubled slashes) counts against one budget per address, and change-password, which
 * checks the current password, is limited like sign-in.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authRoutes } from '../../generated/auth-routes.ts';
import { SENSITIVE } from '../../src/http/identity-limiter.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { createUser } from '../support/users.ts';

/** The sensitive budget a minute per address (AUTH_RATE_LIMIT_PER_MINUTE). */
const LIMIT = 3;
let server: TestServer;
let addresses = 0;
/** A fresh client address, so each case starts with whole budgets. */
const newAddress = () => `203.0.113.${++addresses}`;

beforeAll(async () => {
  server = await startTestServer({ env: { TRUST_PROXY: 'true', AUTH_RATE_LIMIT_PER_MINUTE: String(LIMIT), EMAIL_PROVIDER: 'log' } });
});
afterAll(() => server?.close());

const post = (path: string, from: string, body: object, headers: Record<string, string> = {}) =>
  server.fetch(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': from, ...headers },
    body: JSON.stringify(body),
  });

/** Spellings of `/api/auth<route>` that name the same route. */
function spellings(route: string): string[] {
  const mixed = route.replace(/(^|[-/])([a-z])/g, (_all, before: string, letter: string) => before + letter.toUpperCase());
  const escaped = route.replace(/[a-z]/, (letter) => `%${letter.charCodeAt(0).toString(16)}`);
  return [`/Api/Auth${mixed}`, `/API/AUTH${route.toUpperCase()}`, `/api/auth${route}/`, `/api/auth${escaped}`, `/api/auth/${route}`];
}

describe('the sensitive identity budget, whatever the spelling', () => {
  it('lists every route that checks a password or a reset token or mails a link', () => {
    expect([...SENSITIVE].toSorted()).toEqual(
      expect.arrayContaining(['auth.changePassword', 'auth.requestPasswordReset', 'auth.resetPassword', 'auth.sendVerificationEmail', 'auth.signInEmail', 'auth.signUpEmail']),
    );
    for (const name of SENSITIVE) expect(Object.keys(authRoutes)).toContain(name);
  });

  it.each([
    { route: '/request-password-reset', body: { email: 'nobody@example.com' } },
    { route: '/sign-in/email', body: { email: 'nobody@example.com', password: 'a wrong guess' } },
    { route: '/send-verification-email', body: { email: 'nobody@example.com' } },
    { route: '/reset-password', body: { token: 'made-up-token', newPassword: 'a new password of length' } },
  ])('$route: mixed case, trailing slash, escaped letters and doubled slashes share the canonical budget', async ({ route, body }) => {
    const from = newAddress();
    const paths = [`/api/auth${route}`, ...spellings(route)];
    const statuses: number[] = [];
    for (const path of paths) statuses.push((await post(path, from, body)).status);
    // The first LIMIT, whichever spelling, are answered (or 404 where the router takes no such
    // spelling); every one after is refused, the canonical path included.
    expect(statuses.slice(LIMIT)).toEqual(new Array(paths.length - LIMIT).fill(429));
    expect(statuses.slice(0, LIMIT)).not.toContain(429);
    const again = await post(`/api/auth${route}`, from, body);
    expect(again.status).toBe(429);
    expect(await again.json()).toMatchObject({ code: 'TOO_MANY_REQUESTS', message: 'Too many attempts, try again in a minute.' });
    // Another address has its budget whole.
    expect((await post(`/Api/Auth${route}`, newAddress(), body)).status).not.toBe(429);
  });

  it('counts a mixed-case request-password-reset that the router serves against the budget (issue 23: 25 in a row were answered)', async () => {
    const from = newAddress();
    const statuses: number[] = [];
    for (let i = 0; i < 2 * LIMIT; i += 1) statuses.push((await post('/Api/Auth/Request-Password-Reset', from, { email: 'nobody@example.com' })).status);
    expect(statuses).toEqual([...new Array(LIMIT).fill(200), ...new Array(LIMIT).fill(429)]);
  });

  it('limits change-password: a session guessing the current password gets the tight budget, in any spelling', async () => {
    const user = await createUser(server.db);
    const from = newAddress();
    const guess = (path: string) => post(path, from, { currentPassword: 'a wrong guess', newPassword: 'another long password' }, user.headers);
    const statuses: number[] = [];
    for (const path of ['/api/auth/change-password', '/Api/Auth/Change-Password', '/api/auth/change-password', '/API/AUTH/CHANGE-PASSWORD', '/api/auth/change-password']) {
      statuses.push((await guess(path)).status);
    }
    expect(statuses).toEqual([...new Array(LIMIT).fill(401), 429, 429]);
  });
});
