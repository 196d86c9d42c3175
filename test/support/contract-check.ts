/**
 * Checks every response a test receives against the contract: the procedure is found from the
 * method and path (REST) or the /rpc path, and the body must match the schema the contract gives
 * for that status. A status the operation does not declare is a failure too.
 */
import { procedures, type ProcedureDefinition } from '../../generated/procedures.ts';
import { outputValidator, schemaValidator, toIssues, type ValidateFunction } from '../../src/http/validation.ts';

const rest = Object.values(procedures).map((procedure: ProcedureDefinition) => ({
  procedure,
  pattern: new RegExp(`^/api/v1${procedure.path.replace(/\{[^}]+\}/g, '[^/]+')}$`),
}));

export function findProcedure(method: string, pathname: string): ProcedureDefinition | undefined {
  if (pathname.startsWith('/rpc/')) {
    const name = pathname.slice(5).replace(/\//g, '.');
    return Object.values(procedures).find((p) => p.name === name);
  }
  // GET /workspaces/{slug} and PATCH /workspaces/{id} share a shape: the method tells them apart.
  return rest.find(({ procedure, pattern }) => procedure.method === method && pattern.test(pathname))?.procedure;
}

/** Throws when the answer breaks the contract. */
export function assertMatchesContract(method: string, url: URL, status: number, contentType: string | null, body: unknown): void {
  const where = `${method} ${url.pathname} -> ${status}`;
  if (url.pathname === '/api/v1/openapi.json' || !(url.pathname.startsWith('/api/v1/') || url.pathname.startsWith('/rpc/'))) return;
  const procedure = findProcedure(method, url.pathname);
  let validate: ValidateFunction | undefined;
  if (!procedure || (url.pathname.startsWith('/rpc/') && method !== 'POST')) {
    // Outside every procedure: only the HTTP layer's own answers may come back.
    validate = { 404: schemaValidator('NotFoundError'), 405: schemaValidator('MethodNotAllowedError'), 413: schemaValidator('TransportErrorBody'), 429: schemaValidator('TooManyRequestsError') }[status];
    if (!validate) throw new Error(`${where}: no operation here, and the HTTP layer never answers ${status}`);
  } else {
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
