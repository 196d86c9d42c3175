/**
 * A local HTTP server that plays GitHub (token endpoint, /user, /user/emails) and Google
 * (discovery, token endpoint, JWKS, RS256-signed ID tokens, userinfo) closely enough for the
 * real oauth4webapi code to run against it. A test hands it the profile a code stands for.
 */
import { createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface GitHubProfile {
  id: number;
  login: string;
  name: string | null;
  avatar_url: string | null;
  emails: { email: string; primary: boolean; verified: boolean }[];
}

export interface GoogleProfile {
  sub: string;
  email: string;
  email_verified: boolean;
  name: string;
  picture: string | null;
}

type Grant =
  | { provider: 'github'; profile: GitHubProfile }
  | { provider: 'google'; profile: GoogleProfile; challenge: string; nonce: string; idTokenOverrides?: Record<string, unknown>; signWithUnknownKey?: boolean };

export const CLIENT = { id: 'test-client-id', secret: 'test-client-secret' };

export interface FakeProviders {
  origin: string;
  env: Record<string, string>;
  /** A code the token endpoint will accept once, standing for this grant. */
  issueCode(grant: Grant): string;
  /** Every token request's form fields, in order. */
  tokenRequests: Record<string, string>[];
  close(): Promise<void>;
}

export async function startFakeProviders(): Promise<FakeProviders> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const codes = new Map<string, Grant>();
  const accessTokens = new Map<string, Grant>();
  const tokenRequests: Record<string, string>[] = [];
  let counter = 0;
  let origin = '';

  const server = createServer((req, res) => {
    route(req, res).catch((error: unknown) => json(res, 500, { error: String(error) }));
  });

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url!, origin);
    const google = `${origin}/google`;
    switch (`${req.method} ${url.pathname}`) {
      case 'GET /google/.well-known/openid-configuration':
        return json(res, 200, {
          issuer: google,
          authorization_endpoint: `${google}/o/oauth2/v2/auth`,
          token_endpoint: `${google}/token`,
          userinfo_endpoint: `${google}/userinfo`,
          jwks_uri: `${google}/certs`,
          response_types_supported: ['code'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['RS256'],
          code_challenge_methods_supported: ['S256'],
        });
      case 'GET /google/certs':
        return json(res, 200, { keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'RS256', use: 'sig' }] });
      case 'POST /google/token':
      case 'POST /github/login/oauth/access_token':
        return token(req, res, url.pathname.startsWith('/google') ? 'google' : 'github');
      case 'GET /google/userinfo': {
        const grant = bearer(req);
        if (grant?.provider !== 'google') return json(res, 401, { error: 'invalid_token' });
        return json(res, 200, grant.profile);
      }
      case 'GET /github-api/user': {
        const grant = bearer(req);
        if (grant?.provider !== 'github') return json(res, 401, { message: 'Bad credentials' });
        const { emails: _emails, ...user } = grant.profile;
        return json(res, 200, user);
      }
      case 'GET /github-api/user/emails': {
        const grant = bearer(req);
        if (grant?.provider !== 'github') return json(res, 401, { message: 'Bad credentials' });
        return json(
          res,
          200,
          grant.profile.emails.map((entry) => ({ ...entry, visibility: null })),
        );
      }
      default:
        return json(res, 404, { error: 'not_found' });
    }
  }

  async function token(req: IncomingMessage, res: ServerResponse, provider: 'github' | 'google'): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString()));
    tokenRequests.push(form);
    const grant = codes.get(form.code ?? '');
    const expectedRedirect = new RegExp(`/api/auth/callback/${provider}$`);
    const refuse = () =>
      provider === 'github'
        ? // GitHub answers a bad code with 200 and an error body.
          json(res, 200, { error: 'bad_verification_code', error_description: 'The code passed is incorrect or expired.' })
        : json(res, 400, { error: 'invalid_grant' });
    if (!grant || grant.provider !== provider || form.client_id !== CLIENT.id || form.client_secret !== CLIENT.secret || !expectedRedirect.test(form.redirect_uri ?? '')) return refuse();
    if (grant.provider === 'google' && s256(form.code_verifier ?? '') !== grant.challenge) return refuse();
    codes.delete(form.code!);
    const accessToken = `at-${++counter}`;
    accessTokens.set(accessToken, grant);
    if (grant.provider === 'github') return json(res, 200, { access_token: accessToken, token_type: 'bearer', scope: 'read:user,user:email' });
    const now = Math.floor(Date.now() / 1000);
    const idToken = jwt(grant.signWithUnknownKey ? generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey : privateKey, {
      iss: `${origin}/google`,
      aud: CLIENT.id,
      sub: grant.profile.sub,
      iat: now,
      exp: now + 3600,
      nonce: grant.nonce,
      email: grant.profile.email,
      email_verified: grant.profile.email_verified,
      ...grant.idTokenOverrides,
    });
    return json(res, 200, { access_token: accessToken, token_type: 'Bearer', expires_in: 3599, scope: 'openid email profile', id_token: idToken });
  }

  function bearer(req: IncomingMessage): Grant | undefined {
    const match = /^Bearer (\S+)$/i.exec(req.headers.authorization ?? '');
    return match ? accessTokens.get(match[1]!) : undefined;
  }

  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    origin,
    env: {
      GITHUB_CLIENT_ID: CLIENT.id,
      GITHUB_CLIENT_SECRET: CLIENT.secret,
      GITHUB_URL: `${origin}/github`,
      GITHUB_API_URL: `${origin}/github-api`,
      GOOGLE_CLIENT_ID: CLIENT.id,
      GOOGLE_CLIENT_SECRET: CLIENT.secret,
      GOOGLE_ISSUER: `${origin}/google`,
    },
    issueCode(grant) {
      const code = `code-${++counter}`;
      codes.set(code, grant);
      return code;
    },
    tokenRequests,
    async close() {
      server.closeAllConnections();
      server.close();
    },
  };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(body));
}

function s256(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

function jwt(key: KeyObject, claims: Record<string, unknown>): string {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const input = `${encode({ alg: 'RS256', kid: 'k1', typ: 'JWT' })}.${encode(claims)}`;
  return `${input}.${sign('sha256', Buffer.from(input), key).toString('base64url')}`;
}
