/**
 * The two published documents (generated/openapi.json and generated/auth-openapi.json) as a
 * partner sees them: a component name means one shape in both (an SDK generated from each, or a
 * merged one, never gets two `User` types that disagree), and every component is referenced by
 * something (no dead schemas to generate, mock or document).
 */
import { readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';

type Json = Record<string, any>;

const read = (name: string): Json => JSON.parse(readFileSync(new URL(`../../generated/${name}`, import.meta.url), 'utf8'));
const documents: Record<string, Json> = { 'openapi.json': read('openapi.json'), 'auth-openapi.json': read('auth-openapi.json') };

/** Every component as `kind/name` -> its content. */
function components(doc: Json): Map<string, unknown> {
  const all = new Map<string, unknown>();
  for (const [kind, entries] of Object.entries<Json>(doc.components ?? {})) {
    for (const [name, value] of Object.entries(entries)) all.set(`${kind}/${name}`, value);
  }
  return all;
}

/** The `kind/name` of every local component `$ref` anywhere inside `node`. */
function refsIn(node: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(node)) for (const item of node) refsIn(item, found);
  else if (node !== null && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') {
        const match = /^#\/components\/([^/]+)\/([^/]+)$/.exec(value);
        if (!match) throw new Error(`unexpected $ref ${value}`);
        found.add(`${match[1]}/${decodeURIComponent(match[2]!.replace(/~1/g, '/').replace(/~0/g, '~'))}`);
      } else refsIn(value, found);
    }
  }
  return found;
}

/** Security scheme names used by the global and per-operation `security` requirements. */
function securityRefs(doc: Json): Set<string> {
  const requirements: Json[] = [...(doc.security ?? [])];
  for (const item of Object.values<Json>(doc.paths ?? {})) {
    for (const operation of Object.values<Json>(item)) if (Array.isArray(operation?.security)) requirements.push(...operation.security);
  }
  return new Set(requirements.flatMap((requirement) => Object.keys(requirement).map((name) => `securitySchemes/${name}`)));
}

/** The components reachable from the document's paths, webhooks and security, following refs. */
function referencedComponents(doc: Json): Set<string> {
  const all = components(doc);
  const { components: _components, ...rest } = doc;
  const reached = new Set<string>([...securityRefs(doc)]);
  const queue = [...refsIn(rest)];
  while (queue.length > 0) {
    const key = queue.pop()!;
    if (reached.has(key)) continue;
    reached.add(key);
    if (!all.has(key)) throw new Error(`$ref to #/components/${key}, which the document does not have`);
    queue.push(...refsIn(all.get(key)));
  }
  return reached;
}

function unusedComponents(doc: Json): string[] {
  const reached = referencedComponents(doc);
  return [...components(doc).keys()].filter((key) => !reached.has(key));
}

/** Names present in both documents (same kind) whose content differs. */
function namesWithTwoShapes(a: Json, b: Json): string[] {
  const left = components(a);
  const right = components(b);
  return [...left.keys()].filter((key) => right.has(key) && !isDeepStrictEqual(left.get(key), right.get(key)));
}

describe('component names across the published documents', () => {
  it('a name present in both documents has the same content in both', () => {
    expect(namesWithTwoShapes(documents['openapi.json']!, documents['auth-openapi.json']!)).toEqual([]);
  });

  it('the check itself catches a name reused with another shape, and allows an identical one', () => {
    const a = { components: { schemas: { User: { type: 'object', required: ['id'] }, Same: { type: 'string' } } } };
    const b = { components: { schemas: { User: { type: 'object', required: ['id', 'banned'] }, Same: { type: 'string' } } } };
    expect(namesWithTwoShapes(a, b)).toEqual(['schemas/User']);
  });
});

describe('no unused components', () => {
  for (const [name, doc] of Object.entries(documents)) {
    it(`${name}: every component is referenced, and every $ref resolves`, () => {
      expect(unusedComponents(doc)).toEqual([]);
    });
  }

  it('the check itself follows refs through components and catches a dead one', () => {
    const doc = {
      security: [{ bearerAuth: [] }],
      paths: { '/x': { get: { responses: { '200': { $ref: '#/components/responses/Ok' } } } } },
      components: {
        securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' }, sessionCookie: { type: 'apiKey', in: 'cookie', name: 'session' } },
        responses: { Ok: { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } } } },
        schemas: { Thing: { type: 'object', properties: { part: { $ref: '#/components/schemas/Part' } } }, Part: { type: 'string' }, Dead: { $ref: '#/components/schemas/Part' } },
      },
    };
    expect(unusedComponents(doc)).toEqual(['securitySchemes/sessionCookie', 'schemas/Dead']);
    expect(() => unusedComponents({ paths: { '/x': { get: { responses: { '200': { $ref: '#/components/responses/Gone' } } } } } })).toThrow(/Gone/);
  });
});
