/**
 * The RPC body format: `{ json, meta }`. JSON cannot carry a Date, so `json` holds its ISO 8601
 * string and `meta` lists where the dates were, letting both ends get real Date objects back.
 * Used by the server's RPC transport and by the generated client alike.
 */
export type WirePath = (string | number)[];
export type WireMeta = ['date', WirePath][];

export interface WireBody {
  json: unknown;
  meta?: WireMeta;
}

export function encode(value: unknown): WireBody {
  const meta: WireMeta = [];
  const json = walk(value, [], meta);
  return meta.length > 0 ? { json, meta } : { json };
}

function walk(value: unknown, path: WirePath, meta: WireMeta): unknown {
  if (value instanceof Date) {
    meta.push(['date', path]);
    return value.toISOString();
  }
  if (Array.isArray(value)) return value.map((item, index) => walk(item, [...path, index], meta));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value)) {
      if (child !== undefined) out[key] = walk(child, [...path, key], meta);
    }
    return out;
  }
  return value;
}

/** Rebuilds Dates at the places meta names. Throws on a malformed body: the caller answers 400. */
export function decode(body: unknown): unknown {
  if (body === null || typeof body !== 'object' || Array.isArray(body) || !('json' in body)) {
    throw new WireError('The RPC body must be an object { json, meta? }');
  }
  const { json, meta = [] } = body as WireBody;
  if (!Array.isArray(meta)) throw new WireError('meta must be an array');
  let root = json;
  for (const entry of meta) {
    if (!Array.isArray(entry) || entry[0] !== 'date' || !Array.isArray(entry[1])) {
      throw new WireError('meta entries must be ["date", path]');
    }
    root = reviveAt(root, entry[1]);
  }
  return root;
}

function reviveAt(root: unknown, path: WirePath): unknown {
  if (path.length === 0) return toDate(root);
  let parent: unknown = root;
  for (const key of path.slice(0, -1)) {
    parent = typeof parent === 'object' && parent !== null ? (parent as Record<string | number, unknown>)[key] : undefined;
  }
  const last = path[path.length - 1]!;
  if (parent === null || typeof parent !== 'object' || !(last in parent)) throw new WireError('meta names a missing value');
  const holder = parent as Record<string | number, unknown>;
  holder[last] = toDate(holder[last]);
  return root;
}

function toDate(value: unknown): Date {
  const date = typeof value === 'string' ? new Date(value) : new Date(Number.NaN);
  if (Number.isNaN(date.getTime())) throw new WireError('meta marks a value that is not a date');
  return date;
}

export class WireError extends Error {
  override name = 'WireError';
}
