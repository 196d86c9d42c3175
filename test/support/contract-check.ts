/**
 * Checks every response a test receives against the contract: the procedure is found from the
 * method and path (REST) or the /rpc path, and the body must match the schema the contract gives
 * for that status. A status the operation does not declare is a failure too.
 */
import { allowedMethods, findRoute } from '../../src/http/route-lookup.ts';
import { outputValidator, schemaValidator, toIssues, type ValidateFunction } from '../../src/contract/validators.ts';

/** The operations declared on a path (any method), from the route tables. */
function operationsAt(pathname: string) {
  return allowedMethods(pathname).flatMap((allowed) => findRoute(allowed, pathname) ?? []);
}

/** Throws when the answer breaks the contract. */
export function assertMatchesContract(method: string, url: URL, status: number, contentType: string | null, body: unknown): void {
  const where = `${method} ${url.pathname} -> ${status}`;
  if (url.pathname.endsWith('/openapi.json') || url.pathname.startsWith('/api/auth/reference')) return;
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
