/**
 * Which declared operation a method and path belong to, from the generated tables. Used where the
 * router has not (yet) picked one: the 404/405 answer, and errors raised before routing (the
 * limiter, the body parser), so `defined` is right for those too.
 */
import { authRoutes } from '../../generated/auth-routes.ts';
import { procedures, type ProcedureDefinition } from '../../generated/procedures.ts';

interface Template {
  pattern: RegExp;
  definition: ProcedureDefinition;
}

const templates: Template[] = [...Object.values(procedures).map((definition) => template('/api/v1', definition)), ...Object.values(authRoutes).map((definition) => template('/api/auth', definition))];
const byRpcPath = new Map<string, ProcedureDefinition>(Object.values(procedures).map((p) => [`/rpc/${p.name.replace(/\./g, '/')}`, p]));

// Case-insensitive, as every router of the app (Express's default; none sets caseSensitive).
function template(prefix: string, definition: ProcedureDefinition): Template {
  return { pattern: new RegExp(`^${prefix}${definition.path.replace(/\{[^}]+\}/g, '[^/]+')}$`, 'i'), definition };
}

/**
 * Every spelling of a path that a router could take for one route, made one: percent-escapes
 * decoded, runs of `/` made one, trailing `/` dropped, lower case. Wider than what Express routes
 * today (its routers ignore case; the strict ones refuse a trailing `/` and an escaped letter), so
 * a budget keyed by it holds whatever router options change later. The caller has checked that the
 * path decodes (app.ts, wellEncodedPath).
 */
export function canonicalPath(path: string): string {
  let decoded = path;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    // Not valid percent-encoding: answered 400 before any router, so no route takes it.
  }
  return decoded
    .replace(/\/{2,}/g, '/')
    .replace(/(.)\/+$/, '$1')
    .toLowerCase();
}

export function findRoute(method: string, path: string): ProcedureDefinition | undefined {
  if (path.startsWith('/rpc/')) return byRpcPath.get(path);
  // GET /workspaces/{slug} and PATCH /workspaces/{id} share a shape: the method tells them apart.
  return templates.find((t) => t.definition.method === method && t.pattern.test(path))?.definition;
}

/** The methods a path accepts, for a 405's Allow header; empty when no operation has this path. */
export function allowedMethods(path: string): string[] {
  if (path.startsWith('/rpc/')) return byRpcPath.has(path) ? ['POST'] : [];
  const allowed = new Set<string>();
  for (const { pattern, definition } of templates) {
    if (!pattern.test(path)) continue;
    allowed.add(definition.method);
    // Express answers HEAD for a GET route under /api/v1; the identity router refuses HEAD (its GETs act).
    if (definition.method === 'GET' && path.startsWith('/api/v1/')) allowed.add('HEAD');
  }
  return [...allowed].sort();
}
