/**
 * The validator is the whole contract: every keyword of every input schema (each body schema and
 * each path or query parameter schema, in both contracts) reaches the schema the input validator
 * is compiled from, every example of the contracts validates, and the generated validators refuse
 * what the contract refuses (ids of the wrong shape, control characters, NUL in metadata, a
 * jobs.create that breaks its kind rules).
 */
import { describe, expect, it } from 'vitest';
import v1Document from '../../generated/openapi.json' with { type: 'json' };
import authDocument from '../../generated/auth-openapi.json' with { type: 'json' };
import { procedures } from '../../generated/procedures.ts';
import { authRoutes } from '../../generated/auth-routes.ts';
import { ANY, dateInputs, deref, mergeInputSchema, readOperations, type Operation } from '../../codegen/operations.ts';
import { createAjv, DROPPED_ANNOTATIONS, TEXT_KEYWORDS, toAjvSchema } from '../../codegen/validators.ts';
import { validateInput } from '../../src/contract/validators.ts';
import { ApiError } from '../../src/contract/errors.ts';
import { newId } from '../../src/ids.ts';

type Json = Record<string, any>;

const documents = [
  ['openapi.yaml', v1Document as Json, procedures as Record<string, { dateInputs: readonly (readonly string[])[] }>],
  ['auth.yaml', authDocument as Json, authRoutes as Record<string, { dateInputs: readonly (readonly string[])[] }>],
] as const;

const SCHEMA_MAPS = ['properties', 'patternProperties', 'dependentSchemas', '$defs'];
const SCHEMA_VALUES = ['items', 'additionalProperties', 'unevaluatedProperties', 'unevaluatedItems', 'contains', 'propertyNames', 'not', 'if', 'then', 'else'];
const SCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];

/** Every keyword of a schema tree as [JSON pointer, value of a leaf keyword], not following $refs. */
function keywords(schema: unknown, at = ''): [string, unknown][] {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return [[at, schema]];
  const out: [string, unknown][] = [];
  for (const [key, value] of Object.entries<unknown>(schema as Json)) {
    const here = `${at}/${key}`;
    if (SCHEMA_MAPS.includes(key)) for (const [name, sub] of Object.entries<unknown>(value as Json)) out.push(...keywords(sub, `${here}/${name}`));
    else if (SCHEMA_VALUES.includes(key)) out.push(...keywords(value, here));
    else if (SCHEMA_LISTS.includes(key)) (value as unknown[]).forEach((sub, i) => out.push(...keywords(sub, `${here}/${i}`)));
    else out.push([here, value]);
  }
  return out;
}

/** Every schema reachable from `schema`, following $refs into the components (each once). */
function reachable(doc: Json, schema: unknown, seen = new Set<unknown>()): Json[] {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema) || seen.has(schema)) return [];
  seen.add(schema);
  const node = schema as Json;
  const out: Json[] = [node];
  if (typeof node.$ref === 'string') out.push(...reachable(doc, deref(doc, node), seen));
  for (const key of SCHEMA_MAPS) for (const sub of Object.values<unknown>(node[key] ?? {})) out.push(...reachable(doc, sub, seen));
  for (const key of SCHEMA_VALUES) out.push(...reachable(doc, node[key], seen));
  for (const key of SCHEMA_LISTS) for (const sub of node[key] ?? []) out.push(...reachable(doc, sub, seen));
  return out;
}

/** The keyword a JSON pointer ends with, and whether it is an annotation the validator may drop. */
function droppable(pointer: string): boolean {
  const keyword = pointer.split('/').at(-1)!;
  return (DROPPED_ANNOTATIONS as readonly string[]).includes(keyword) || (keyword.startsWith('x-') && !(TEXT_KEYWORDS as readonly string[]).includes(keyword));
}

interface InputSchemas {
  parameters: { name: string; schema: Json }[];
  body: Json | undefined;
}

function inputSchemasOf(doc: Json, op: Operation): InputSchemas {
  const item = doc.paths[op.path];
  const operation = item[op.method.toLowerCase()];
  const parameters = [...(item.parameters ?? []), ...(operation.parameters ?? [])]
    .map((ref: Json) => deref(doc, ref))
    .filter((p: Json) => p.in === 'path' || p.in === 'query')
    .map((p: Json) => ({ name: p.name as string, schema: p.schema as Json }));
  const ref = operation.requestBody && deref(doc, operation.requestBody).content?.['application/json']?.schema;
  return { parameters, body: ref ? deref(doc, ref) : undefined };
}

function issuesOf(procedure: string, input: Record<string, unknown>) {
  try {
    validateInput(procedure, input);
    return [];
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return ((error as ApiError).data as { issues: { path: (string | number)[]; message: string; params?: Json }[] }).issues;
  }
}

describe.each(documents)('%s: every keyword of every input schema reaches the input validator', (_file, doc, table) => {
  const operations = readOperations(doc);

  it.each(operations.map((op) => [op.name, op] as const))('%s', (_name, op) => {
    const merged = toAjvSchema(op.inputSchema) as Json;
    const actual = new Map(keywords(merged).map(([pointer, value]) => [pointer, JSON.stringify(value)]));
    const { parameters, body } = inputSchemasOf(doc, op);

    // Each parameter schema is a property of the merged input, every keyword in place.
    for (const { name, schema } of parameters) {
      for (const [pointer, value] of keywords(toAjvSchema(schema), `/properties/${name}`)) {
        expect(actual.get(pointer), `${op.name}: parameter ${name}, ${pointer}`).toBe(JSON.stringify(value));
      }
      expect(op.inputSchema.properties[name]).toEqual(schema);
    }
    // Every keyword of the body schema is at the same place in the merged input (whose `required`
    // also lists the required parameters).
    if (body) {
      for (const [pointer, value] of keywords(toAjvSchema(body))) {
        if (pointer === '/required') {
          expect(merged.required).toEqual(expect.arrayContaining(value as string[]));
          continue;
        }
        expect(actual.get(pointer), `${op.name}: body ${pointer}`).toBe(JSON.stringify(value));
      }
    }
    // What the merged input holds besides: the parameters, their required names, and closing
    // the object when the body does not say (it always does in this contract).
    const expected = new Set([
      ...parameters.flatMap(({ name, schema }) => keywords(toAjvSchema(schema), `/properties/${name}`).map(([p]) => p)),
      ...(body ? keywords(toAjvSchema(body)).map(([p]) => p) : ['/type', '/additionalProperties']),
      '/required',
    ]);
    expect([...actual.keys()].filter((pointer) => !expected.has(pointer))).toEqual([]);

    // Nothing the validator needs is dropped on the way to Ajv, here or in a referenced component.
    for (const schema of reachable(doc, op.inputSchema)) {
      const kept = new Set(keywords(toAjvSchema(schema)).map(([pointer]) => pointer));
      const lost = keywords(schema).map(([pointer]) => pointer).filter((pointer) => !kept.has(pointer) && !pointer.endsWith('/$ref'));
      expect(lost.filter((pointer) => !droppable(pointer)), `${op.name}: dropped keywords`).toEqual([]);
    }

    // Ajv in strict mode compiles it: no keyword is unknown to it, so none is silently ignored.
    expect(() => createAjv(doc, { useDefaults: true }).compile(merged)).not.toThrow();
  });

  it('the body schemas all close the object and lose nothing in the merge', () => {
    for (const op of operations) {
      const { body } = inputSchemasOf(doc, op);
      if (body) expect(body.additionalProperties, op.name).toBe(false);
    }
  });

  it('every route table row lists the date inputs its contract declares', () => {
    for (const op of operations) {
      expect(table[op.name]!.dateInputs, op.name).toEqual(dateInputs(doc, op.name, op.inputSchema));
      // No input of either contract declares a date-time today.
      expect(table[op.name]!.dateInputs, op.name).toEqual([]);
    }
  });
});

describe('mergeInputSchema carries every keyword of the body', () => {
  const doc = { components: { schemas: { Closed: { type: 'object', additionalProperties: false } } } };
  const body = {
    type: 'object',
    description: 'every keyword',
    required: ['kind'],
    additionalProperties: false,
    properties: { kind: { enum: ['a', 'b'] }, a: { type: 'string' }, b: { type: 'integer' }, c: { type: 'boolean' } },
    // (Ajv's strict mode wants a subschema's `required` names among its own `properties`.)
    allOf: [{ if: { properties: { kind: { const: 'a' } } }, then: { properties: { a: true }, required: ['a'] }, else: { not: { properties: { a: true }, required: ['a'] } } }],
    anyOf: [{ properties: { a: true }, required: ['a'] }, { properties: { b: true }, required: ['b'] }],
    oneOf: [{ properties: { kind: true, a: true, b: true, c: true }, additionalProperties: false }],
    dependentRequired: { c: ['b'] },
    dependentSchemas: { b: { properties: { b: { type: 'integer', minimum: 1 } }, unevaluatedProperties: true } },
  };

  it('keeps them all, verbatim, without parameters', () => {
    const merged = mergeInputSchema(doc, 'x', {}, [], body);
    expect(merged).toEqual(body);
  });

  it('adds the parameters beside the body and exempts them where a subschema closes the object', () => {
    const merged = mergeInputSchema(doc, 'x', { id: { type: 'string' } }, ['id'], body);
    expect(merged.properties).toEqual({ id: { type: 'string' }, ...body.properties });
    expect(merged.required).toEqual(['id', 'kind']);
    expect(merged.oneOf[0].properties).toEqual({ kind: true, a: true, b: true, c: true, id: true });
    const { properties: _p, required: _r, oneOf: _o, ...rest } = merged;
    const { properties: _bp, required: _br, oneOf: _bo, ...bodyRest } = body;
    expect(rest).toEqual(bodyRest);
    const validate = createAjv(doc as Json, { useDefaults: false }).compile(toAjvSchema(merged) as Json);
    expect(validate({ id: 'x', kind: 'a', a: 'y' })).toBe(true);
    expect(validate({ id: 'x', kind: 'a' })).toBe(false);
    expect(validate({ id: 'x', kind: 'b', a: 'y' })).toBe(false);
    expect(validate({ id: 'x', kind: 'b', b: 2, c: true })).toBe(true);
    expect(validate({ id: 'x', kind: 'b', c: true })).toBe(false);
    expect(validate({ id: 'x', kind: 'b', b: 0 })).toBe(false);
    expect(validate({ kind: 'b', b: 2 })).toBe(false);
  });

  it.each([
    ['minProperties', { ...body, minProperties: 1 }],
    ['maxProperties', { ...body, maxProperties: 3 }],
    ['propertyNames', { ...body, propertyNames: { pattern: '^[a-z]$' } }],
    ['patternProperties', { ...body, patternProperties: { '^x': true } }],
    ['a nested minProperties', { ...body, allOf: [{ minProperties: 2 }] }],
    ['an in-place $ref that closes the object', { ...body, allOf: [{ $ref: '#/components/schemas/Closed' }] }],
  ])('refuses %s beside parameters rather than let it count them', (_what, schema) => {
    expect(() => mergeInputSchema(doc, 'x', { id: { type: 'string' } }, [], schema)).toThrow(/parameters/);
    expect(() => mergeInputSchema(doc, 'x', {}, [], schema)).not.toThrow();
  });
});

describe('dateInputs', () => {
  const doc = {
    components: {
      schemas: {
        Window: { type: 'object', properties: { from: { type: 'string', format: 'date-time' }, to: { type: ['string', 'null'], format: 'date-time' } } },
        Tree: { type: 'object', properties: { children: { type: 'array', items: { $ref: '#/components/schemas/Tree' } } } },
      },
    },
  };

  it('lists the date-time paths, with the wildcard for array elements and map values', () => {
    const schema = {
      type: 'object',
      properties: {
        at: { type: 'string', format: 'date-time' },
        name: { type: 'string' },
        window: { $ref: '#/components/schemas/Window' },
        windows: { type: 'array', items: { $ref: '#/components/schemas/Window' } },
        byKey: { type: 'object', additionalProperties: { type: 'string', format: 'date-time' } },
        day: { type: 'string', format: 'date' },
        tree: { $ref: '#/components/schemas/Tree' },
      },
      allOf: [{ if: { properties: { at: { format: 'date-time' } } }, then: { properties: { until: { type: 'string', format: 'date-time' } } } }],
    };
    expect(dateInputs(doc, 'x', schema)).toEqual([
      ['at'],
      ['byKey', ANY],
      ['until'],
      ['window', 'from'],
      ['window', 'to'],
      ['windows', ANY, 'from'],
      ['windows', ANY, 'to'],
    ]);
  });

  it('is empty without date-time inputs, and refuses a date inside a recursive schema', () => {
    expect(dateInputs(doc, 'x', { type: 'object', properties: { name: { type: 'string' } } })).toEqual([]);
    const recursive = { components: { schemas: { Node: { type: 'object', properties: { at: { format: 'date-time' }, next: { $ref: '#/components/schemas/Node' } } } } } };
    expect(() => dateInputs(recursive, 'x', { $ref: '#/components/schemas/Node' })).toThrow(/recursive/);
  });
});

describe.each(documents)('%s: every example validates against its schema', (_file, doc) => {
  const examples: [string, Json, unknown][] = [];
  const visit = (schema: unknown, at: string) => {
    if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return;
    const node = schema as Json;
    for (const example of node.examples ?? []) examples.push([at, node, example]);
    for (const key of SCHEMA_MAPS) for (const [name, sub] of Object.entries<unknown>(node[key] ?? {})) visit(sub, `${at}/${key}/${name}`);
    for (const key of SCHEMA_VALUES) visit(node[key], `${at}/${key}`);
    for (const key of SCHEMA_LISTS) (node[key] ?? []).forEach((sub: unknown, i: number) => visit(sub, `${at}/${key}/${i}`));
  };
  for (const [name, schema] of Object.entries<Json>(doc.components.schemas)) visit(schema, `#/components/schemas/${name}`);
  for (const [path, item] of Object.entries<Json>(doc.paths)) {
    for (const [method, operation] of Object.entries<Json>(item)) {
      for (const ref of operation.parameters ?? []) {
        const parameter = deref(doc, ref);
        visit(parameter.schema, `${method} ${path} ${parameter.name}`);
        if (parameter.example !== undefined) examples.push([`${method} ${path} ${parameter.name} (example)`, parameter.schema, parameter.example]);
      }
      const body = operation.requestBody && deref(doc, operation.requestBody).content?.['application/json']?.schema;
      if (body && !body.$ref) visit(body, `${method} ${path} body`);
    }
  }

  it('has examples to check', () => expect(examples.length).toBeGreaterThan(100));

  it('each one is valid', () => {
    const ajv = createAjv(doc, { useDefaults: false });
    const invalid = examples.flatMap(([at, schema, example]) => {
      const validate = ajv.compile(toAjvSchema(schema) as Json);
      return validate(structuredClone(example)) ? [] : [{ at, example, errors: validate.errors }];
    });
    expect(invalid).toEqual([]);
  });
});

describe('the generated validators refuse what the contract refuses', () => {
  const ORG = 'org_pycdybk377oxtzq6svizx3or';
  const DOC = 'doc_zjli6ufh3reosfhypn5nwk2d';
  const path = (issues: { path: (string | number)[] }[]) => issues.map((issue) => issue.path.join('.'));

  it.each([
    // jobs.create's kind rules (the body's allOf/if/then/else) hold.
    ['jobs.create', { organizationId: ORG, kind: 'text.embed', input: { texts: ['a'] }, documentId: DOC }, ['documentId']],
    ['jobs.create', { organizationId: ORG, kind: 'text.embed' }, ['input']],
    ['jobs.create', { organizationId: ORG, kind: 'document.index' }, ['documentId']],
    ['jobs.create', { organizationId: ORG, kind: 'document.index', documentId: DOC, input: { texts: ['a'] } }, ['input']],
    ['jobs.create', { organizationId: ORG, kind: 'document.extract', documentId: DOC }, []],
    ['jobs.create', { organizationId: ORG, kind: 'text.embed', input: { texts: ['line one\nline\ttwo'] } }, []],
    ['jobs.create', { organizationId: ORG, kind: 'text.embed', input: { texts: ['NUL \u0000'] } }, ['input.texts.0']],
    // Ids: the prefix, then 24 characters of lowercase base32.
    ['documents.get', { id: DOC }, []],
    ['documents.get', { id: newId('doc') }, []],
    ['documents.get', { id: 'doc_doesnotexist' }, ['id']],
    ['documents.get', { id: `${DOC}x` }, ['id']],
    ['documents.get', { id: DOC.replace('doc_', 'ws_') }, ['id']],
    ['documents.get', { id: DOC.replace('z', '1') }, ['id']],
    ['documents.list', { workspaceId: 'ws_missing', organizationId: ORG }, ['workspaceId']],
    ['documents.list', { workspaceId: newId('ws'), organizationId: 'org_a' }, ['organizationId']],
    ['jobs.get', { id: newId('job') }, []],
    ['jobs.get', { id: 'job_1' }, ['id']],
    ['system.flags', { organizationId: 'org_1' }, ['organizationId']],
    ['jobs.list', { organizationId: ORG, documentId: 'doc_1' }, ['documentId']],
    ['auth.organization.acceptInvitation', { invitationId: newId('inv') }, []],
    ['auth.organization.acceptInvitation', { invitationId: 'inv_nope' }, ['invitationId']],
    ['auth.organization.updateMemberRole', { organizationId: ORG, memberId: 'mem_nope', role: 'admin' }, ['memberId']],
    ['auth.organization.removeMember', { organizationId: ORG, memberIdOrEmail: newId('mem') }, []],
    ['auth.organization.removeMember', { organizationId: ORG, memberIdOrEmail: 'grace@example.com' }, []],
    ['auth.organization.removeMember', { organizationId: ORG, memberIdOrEmail: 'mem_nope' }, ['memberIdOrEmail', 'memberIdOrEmail']],
    ['auth.organization.addTeamMember', { teamId: newId('team'), userId: newId('usr') }, []],
    ['auth.organization.addTeamMember', { teamId: 'team_nope', userId: 'usr_x' }, ['teamId', 'userId']],
    ['auth.admin.banUser', { userId: 'usr_nobody' }, ['userId']],
    // A session is revoked by its id (24 base32 characters), never by its token.
    ['auth.revokeSession', { id: 'ks2x7q4mhv3n5rtw2cpa6yfb' }, []],
    ['auth.revokeSession', { id: `ks2x7q4mhv3n5rtw2cpa6yfb.${'a'.repeat(52)}` }, ['id']],
    ['auth.revokeSession', { id: 'sess_ks2x7q4mhv3n5rtw2cpa6yfb' }, ['id']],
    // Free text refuses NUL and control characters.
    ['contact.send', { email: 'ada@example.com', message: 'Hello there, operators.', website: 'x\u0000' }, ['website']],
    ['contact.send', { email: 'ada@example.com', message: 'Hello there, operators.', name: 'Ada\u0000' }, ['name']],
    ['documents.list', { workspaceId: newId('ws'), organizationId: ORG, cursor: 'abc\u0000.def' }, ['cursor']],
    ['admin.organizations.list', { search: 'acme\u0000' }, ['search']],
    ['admin.flags.delete', { key: 'a\nb' }, ['key', 'key']],
    ['auth.signUpEmail', { name: 'Ada', email: 'ada@example.com', password: 'long enough\u0000', callbackURL: '/x\u0000' }, ['password', 'callbackURL', 'callbackURL']],
    ['auth.signInEmail', { email: 'ada@example.com', password: 'pass\u0007word' }, ['password']],
    ['auth.resetPassword', { token: 'abc\u0000', newPassword: 'long enough' }, ['token']],
    ['auth.verifyEmail', { token: 'abc', callbackURL: '/done\r\n' }, ['callbackURL', 'callbackURL']],
    ['auth.callback', { provider: 'github', code: 'abc\u0000', state: 'ok' }, ['code']],
    ['auth.organization.create', { name: 'Acme', slug: 'acme\u0000' }, ['slug', 'slug']],
    ['auth.admin.listUsers', { searchValue: 'ada\u0000' }, ['searchValue']],
  ])('%s %j', (procedure, input, want) => {
    expect(path(issuesOf(procedure, input))).toEqual(want);
  });

  describe('organization metadata: any JSON, but no NUL or lone surrogate in a key or a string, at any depth', () => {
    const update = (metadata: unknown) => issuesOf('auth.organization.update', { organizationId: ORG, data: { metadata } });
    it.each([
      [{ industry: 'aerospace', founded: 1843, public: false, tags: ['ai', { nested: [1, 'two\nlines', null] }], emoji: '\u{1f680}' }],
      [null],
      [{}],
    ])('accepts %j', (metadata) => expect(update(metadata)).toEqual([]));
    it.each([
      [{ industry: 'aero\u0000space' }, 'data.metadata.industry'],
      [{ 'bad\u0000key': 1 }, 'data.metadata'],
      [{ tags: ['ok', 'no\u0000'] }, 'data.metadata.tags.1'],
      [{ a: { b: [{ c: 'x\u0000' }] } }, 'data.metadata.a.b.0.c'],
      [{ a: { 'k\u0000': true } }, 'data.metadata.a'],
      [{ lone: 'x\ud800' }, 'data.metadata.lone'],
      [['not', 'an object'], 'data.metadata'],
    ])('refuses %j', (metadata, at) => {
      expect(path(update(metadata))).toContain(at);
    });
  });
});
