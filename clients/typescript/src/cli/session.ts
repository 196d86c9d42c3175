/**
 * What a command runs against: the service's address, the token and, for the commands that need
 * one, the organization, each from the first place that has it:
 *
 * | setting | from |
 * |---|---|
 * | address | `--url`, `WORKSPACE_API_URL`, the address saved by `login`, `http://127.0.0.1:3000` |
 * | token | `--token`, `WORKSPACE_API_TOKEN`, the token saved by `login` (only for the address it was issued by) |
 * | organization | `--org`, `WORKSPACE_API_ORG` (an id or a slug), the one chosen with `orgs use`, else the caller's only organization |
 */
import { createClient } from '../index.ts';
import { readCredentials, type Credentials } from './credentials.ts';
import { CliError, ExitCode, usageError } from './exit-codes.ts';
import { identity, type Identity } from './identity.ts';
import type { Output } from './output.ts';

export type Client = ReturnType<typeof createClient>;

/** The options every command takes (declared on the program, commander hands them down). */
export interface GlobalOptions {
  url?: string;
  token?: string;
  org?: string;
  json?: boolean;
}

export const DEFAULT_URL = 'http://127.0.0.1:3000';

export type TokenSource = 'flag' | 'environment' | 'login';

export interface Session {
  readonly url: string;
  readonly output: Output;
  readonly env: NodeJS.ProcessEnv;
  /** The token and where it came from, or undefined when there is none. */
  readonly token: { value: string; source: TokenSource } | undefined;
  /** What `login` saved, whether or not it is for this address. */
  readonly credentials: Credentials | null;
  readonly identity: Identity;
  /** The token, or exit 3 (not signed in). */
  requireToken(): string;
  /** The typed client, signed in (exit 3 without a token). */
  client(): Client;
  /** The organization id to act in (see the table above). */
  organization(): Promise<string>;
  /** A workspace id from an id (`ws_...`) or a slug of the organization. */
  workspace(reference: string): Promise<string>;
}

export async function openSession(options: GlobalOptions, output: Output, env: NodeJS.ProcessEnv = process.env): Promise<Session> {
  const credentials = await readCredentials(env);
  const url = normalizeUrl(options.url ?? env.WORKSPACE_API_URL ?? credentials?.url ?? DEFAULT_URL);
  const token: Session['token'] = options.token
    ? { value: options.token, source: 'flag' }
    : env.WORKSPACE_API_TOKEN
      ? { value: env.WORKSPACE_API_TOKEN, source: 'environment' }
      : // A saved token is a secret of the service that issued it: never sent to another address.
        credentials && credentials.url === url
        ? { value: credentials.token, source: 'login' }
        : undefined;
  const auth = identity(url);
  let client: Client | undefined;
  let organizationId: Promise<string> | undefined;

  const session: Session = {
    url,
    output,
    env,
    token,
    credentials,
    identity: auth,
    requireToken() {
      if (!token) {
        const elsewhere = credentials && credentials.url !== url ? ` (the saved sign-in is for ${credentials.url})` : '';
        throw new CliError(ExitCode.notSignedIn, 'NOT_SIGNED_IN', `Not signed in to ${url}${elsewhere}. Run \`workspace-api login\`, or pass --token or WORKSPACE_API_TOKEN.`);
      }
      return token.value;
    },
    client() {
      client ??= createClient({ baseUrl: url, token: session.requireToken() });
      return client;
    },
    organization() {
      // Asked once per command: `documents list <slug>` needs it for the slug and for the listing.
      organizationId ??= resolveOrganization();
      return organizationId;
    },
    async workspace(reference) {
      if (reference.startsWith('ws_')) return reference;
      const workspace = await session.client().workspaces.get({ slug: reference, organizationId: await session.organization() });
      return workspace.id;
    },
  };

  async function resolveOrganization(): Promise<string> {
    const wanted = options.org ?? env.WORKSPACE_API_ORG;
    // Slugs are lowercase letters, digits and hyphens, so an `org_` prefix can only be an id.
    if (wanted?.startsWith('org_')) return wanted;
    // The choice of `orgs use` belongs to the saved sign-in: it counts only with that token.
    if (!wanted && token?.source === 'login' && credentials?.organization) return credentials.organization.id;
    const organizations = await auth.organizations(session.requireToken());
    const names = organizations.map((organization) => organization.slug).join(', ');
    if (wanted) {
      const found = organizations.find((organization) => organization.slug === wanted);
      if (!found) throw usageError(`You are not a member of an organization "${wanted}"${names ? `; yours: ${names}` : ''}.`);
      return found.id;
    }
    if (organizations.length === 1) return organizations[0]!.id;
    if (organizations.length === 0) throw new CliError(ExitCode.apiError, 'NO_ORGANIZATION', 'You are not a member of any organization.');
    throw usageError(`You are a member of ${organizations.length} organizations; choose one with --org <slug or id> or WORKSPACE_API_ORG: ${names}.`);
  }
  return session;
}

/**
 * The service's origin as the client wants it: http(s), no trailing slash. The address of the
 * REST API or of RPC (`.../api/v1`, `.../rpc`) is accepted too and cut back to the origin.
 */
export function normalizeUrl(raw: string): string {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw usageError(`"${raw}" is not a URL; give the service's address, e.g. ${DEFAULT_URL}.`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw usageError(`"${raw}" is not an http(s) address.`);
  if (parsed.search || parsed.hash || parsed.username || parsed.password) throw usageError(`"${raw}": give the address without credentials, query or fragment.`);
  const path = parsed.pathname.replace(/\/+$/, '').replace(/\/(api\/v1|rpc)$/, '');
  return `${parsed.origin}${path}`;
}
