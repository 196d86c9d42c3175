/**
 * Checks every response a test receives against the contract: the procedure is found from the
 * method and path (REST) or the /rpc path, and the body must match the schema the contract gives
 * for that status. A status the operation does not declare is a failure too. The operations the
 * HTTP layer serves itself (`x-transport`: the local driver's signed /uploads addresses) are
 * found in the published document and checked the same way: a declared status, a declared media
 * type, and a JSON body that matches its schema.
 */
import { allowedMethods, findRoute } from '../../src/http/route-lookup.ts';
import { outputValidator, schemaValidator, toIssues, type ValidateFunction } from '../../src/contract/validators.ts';
import { deref as derefIn, readPublishedDocument, type Json } from './openapi-document.ts';

const published: Json = readPublishedDocument('openapi.json');

/** The `x-transport` operations of the published document, by method and path pattern (their server is the root). */
const transportRoutes = Object.entries<Json>(published.paths).flatMap(([path, item]) =>
  ['get', 'head', 'put', 'post', 'patch', 'delete']
    .filter((method) => item[method]?.['x-transport'] !== undefined)
    .map((method) => ({ method: method.toUpperCase(), pattern: new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`), operation: item[method] as Json })),
);

const deref = (value: Json): Json => derefIn(published, value);

/** Validates a body against a response schema built of component refs (a $ref, or a oneOf of them). */
function componentsValidate(schema: Json, body: unknown): { ok: boolean; errors: unknown[] } {
  const branches: Json[] = schema.oneOf ?? [schema];
  const errors: unknown[] = [];
  const matches = branches.filter((branch) => {
    const name = /^#\/components\/schemas\/([^/]+)$/.exec(branch.$ref ?? '')?.[1];
    const validate = name === undefined ? undefined : schemaValidator(name);
    if (!validate) throw new Error(`the contract-check reads only component refs here, not ${JSON.stringify(branch)}`);
    if (validate(body)) return true;
    errors.push(...toIssues(validate.errors ?? []));
    return false;
  });
  return { ok: matches.length === 1, errors };
}

/** An answer on a path of an `x-transport` operation; false when the path is none of theirs. */
function assertTransportAnswer(method: string, url: URL, status: number, contentType: string | null, body: unknown): boolean {
  const routes = transportRoutes.filter((route) => route.pattern.test(url.pathname));
  if (routes.length === 0) return false;
  const where = `${method} ${url.pathname} -> ${status}`;
  // Another method: every operation of the path declares the 405 the routes answer.
  const route = routes.find((r) => r.method === method) ?? (status === 405 ? routes[0] : undefined);
  if (!route) throw new Error(`${where}: ${method} is not a method of this path`);
  const declared = route.operation.responses[String(status)];
  // With the S3 driver the routes are not mounted: the HTTP layer's "no route" 404 (the path's description says so).
  if (status === 404 && contentType?.startsWith('application/json') && schemaValidator('NotFoundError')!(body) && (body as Json).defined === false) return true;
  if (!declared) throw new Error(`${where}: ${route.operation.operationId} does not declare status ${status}`);
  const content: Json = deref(declared).content ?? {};
  const mediaType = contentType?.split(';')[0]!.trim().toLowerCase();
  if (Object.keys(content).length === 0) {
    if (body !== undefined) throw new Error(`${where}: ${route.operation.operationId} declares no body for ${status}, got ${JSON.stringify(body)}`);
    return true;
  }
  if (!mediaType || !(mediaType in content)) throw new Error(`${where}: expected one of ${Object.keys(content).join(', ')}, got ${contentType}`);
  const schema = deref(content[mediaType].schema ?? {});
  if (schema.format === 'binary') return true; // the bytes themselves
  const { ok, errors } = componentsValidate(content[mediaType].schema, body);
  if (!ok) throw new Error(`${where}: body breaks the contract: ${JSON.stringify(errors)}\n${JSON.stringify(body)}`);
  return true;
}

/** The operations declared on a path (any method), from the route tables. */
function operationsAt(pathname: string) {
  return allowedMethods(pathname).flatMap((allowed) => findRoute(allowed, pathname) ?? []);
}

/** Throws when the answer breaks the contract. */
export function assertMatchesContract(method: string, url: URL, status: number, contentType: string | null, body: unknown): void {
  const where = `${method} ${url.pathname} -> ${status}`;
  if (url.pathname.endsWith('/openapi.json') || url.pathname.startsWith('/api/auth/reference')) return;
  if (assertTransportAnswer(method, url, status, contentType, body)) return;
  if (!['/api/v1/', '/rpc/', '/api/auth/'].some((prefix) => url.pathname.startsWith(prefix))) return;
  // A declared path called with another method: no operation answered, but every operation of the
  // path declares the 405 the HTTP layer sends there, so the answer is checked against theirs.
  // (An RPC path finds its procedure whatever the method: GET /rpc/... is its declared 405.)
  const procedure = findRoute(method, url.pathname) ?? (status === 405 ? operationsAt(url.pathname)[0] : undefined);
  let validate: ValidateFunction | undefined;
  if (!procedure) {
    // Outside every procedure: only the HTTP layer's own answers may come back.
    validate = { 400: schemaValidator('BadRequestError'), 404: schemaValidator('NotFoundError'), 413: schemaValidator('TransportErrorBody'), 429: schemaValidator('TooManyRequestsError') }[status];
    if (!validate) throw new Error(`${where}: no operation here, and the HTTP layer never answers ${status}`);
  } else {
    if (status >= 300 && status < 400) return; // redirects (identity routes) carry no body
    if (status === 200 && procedure.produces === 'event-stream') {
      if (!contentType?.startsWith('text/event-stream')) throw new Error(`${where}: expected text/event-stream, got ${contentType}`);
      return;
    }
    validate = outputValidator(procedure.name, status);
    if (!validate) throw new Error(`${where}: ${procedure.name} does not declare status ${status}`);
    if (url.pathname.startsWith('/rpc/') && status < 300) body = (body as { json: unknown }).json;
  }
  if (!contentType?.startsWith('application/json')) throw new Error(`${where}: expected JSON, got ${contentType}`);
  if (!validate(body)) {
    throw new Error(`${where}: body breaks the contract: ${JSON.stringify(toIssues(validate.errors ?? []))}\n${JSON.stringify(body)}`);
  }
}
