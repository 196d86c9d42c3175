/**
 * The identity routes the CLI needs (`/api/auth/*`, their own contract: openapi/auth.yaml). They
 * are not procedures, so the typed client does not carry them; their failures are turned into the
 * same ApiClientError, so the CLI reports every answer of the service one way.
 */
import { ApiClientError } from '../index.ts';

export interface AuthUser {
  id: string;
  email: string;
  name: string;
}

export interface OrganizationWithRole {
  id: string;
  name: string;
  slug: string;
  logo: string | null;
  metadata: Record<string, unknown> | null;
  createdAt: string;
  role: 'owner' | 'admin' | 'member';
}

export interface SignInResult {
  token: string | null;
  user: AuthUser & Record<string, unknown>;
}

/** What auth.organization.create answers: the organization, with the caller as its one member. */
export interface CreatedOrganization {
  id: string;
  name: string;
  slug: string;
  createdAt: string;
  members: unknown[];
}

export interface Identity {
  /** A new account; `token` is null when the deployment requires the email address to be verified first. */
  signUp(input: { email: string; password: string; name: string }): Promise<SignInResult>;
  signIn(email: string, password: string): Promise<SignInResult>;
  signOut(token: string): Promise<void>;
  organizations(token: string): Promise<OrganizationWithRole[]>;
  createOrganization(token: string, input: { name: string; slug: string }): Promise<CreatedOrganization>;
}

export function identity(url: string, doFetch: typeof fetch = globalThis.fetch): Identity {
  async function request<T>(method: 'GET' | 'POST', path: string, token: string | undefined, body?: unknown): Promise<T> {
    let response: Response;
    try {
      response = await doFetch(`${url}/api/auth${path}`, {
        method,
        headers: {
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      // The same shape the typed client gives a transport failure: status 0.
      throw new ApiClientError({ code: 'network_error', status: 0, message: `${method} /api/auth${path}: ${(error as Error).message}`, cause: error });
    }
    const requestId = response.headers.get('x-request-id') ?? undefined;
    const answer: unknown = await response.json().catch(() => undefined);
    if (!response.ok) {
      const error = answer as { code?: unknown; message?: unknown; data?: unknown; defined?: unknown } | null | undefined;
      if (error && typeof error.code === 'string') {
        const message = typeof error.message === 'string' ? error.message : response.statusText;
        throw new ApiClientError({ code: error.code, status: response.status, message, data: error.data, defined: error.defined === true, ...(requestId ? { requestId } : {}) });
      }
      throw new ApiClientError({
        code: `HTTP_${response.status}`,
        status: response.status,
        message: response.statusText || 'The service answered an error without a body.',
        ...(requestId ? { requestId } : {}),
      });
    }
    return answer as T;
  }

  return {
    signUp: (input) => request<SignInResult>('POST', '/sign-up/email', undefined, input),
    signIn: (email, password) => request<SignInResult>('POST', '/sign-in/email', undefined, { email, password }),
    async signOut(token) {
      await request<unknown>('POST', '/sign-out', token);
    },
    organizations: (token) => request<OrganizationWithRole[]>('GET', '/organization/list', token),
    createOrganization: (token, input) => request<CreatedOrganization>('POST', '/organization/create', token, input),
  };
}
