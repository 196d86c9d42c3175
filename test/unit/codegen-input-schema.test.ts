/**
 * The validator is the whole contract: every keyword of every input schema (each body schema and
 * each path or query parameter schema, in both contracts) reaches the schema the input validator
 * is compiled from, every example of the contracts validates, and the generated validators refuse
 * what the contract refuses (ids of the wrong shape, control characters, NUL in metadata, a
 * jobs.create that breaks its kind rules).
 */
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import v1Document from '../../generated/openapi.json' with { type: 'json' };
import authDocument from '../../generated/auth-openapi.json' with { type: 'json' };
import { procedures } from '../../generated/procedures.ts';
import { authRoutes } from '../../generated/auth-routes.ts';
import { ANY, dateInputs } from '../../codegen/date-inputs.ts';
import { deref } from '../support/openapi-document.ts';
import { mergeInputSchema } from '../../codegen/input-schema.ts';
import { readOperations, type Operation } from '../../codegen/operations.ts';
import { streamEvents } from '../../codegen/stream-events.ts';
import { createAjv, DROPPED_ANNOTATIONS, TEXT_KEYWORDS, toAjvSchema } from '../../codegen/validators.ts';
import { newId } from '../../src/ids.ts';
import { issuesOf } from '../support/input-issues.ts';

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
    // What the merged input holds besides: the parameters, their required names, its type (a
    // union body, as jobs.create's, has none of its own), and closing the object when the body
    // does not say (every object body does in this contract; a union's branches close it).
    const expected = new Set([
      ...parameters.flatMap(({ name, schema }) => keywords(toAjvSchema(schema), `/properties/${name}`).map(([p]) => p)),
      ...(body ? keywords(toAjvSchema(body)).map(([p]) => p) : ['/additionalProperties']),
      '/type',
      '/required',
    ]);
    if (body?.oneOf) expect(merged.additionalProperties, `${op.name}: a union body is not closed at the top`).toBeUndefined();
    expect([...actual.keys()].filter((pointer) => !expected.has(pointer))).toEqual([]);

    // Nothing the validator needs is dropped on the way to Ajv, here or in a referenced component.
    for (const schema of reachable(doc, op.inputSchema)) {
      const kept = new Set(keywords(toAjvSchema(schema)).map(([pointer]) => pointer));
      const lost = keywords(schema)
        .map(([pointer]) => pointer)
        .filter((pointer) => !kept.has(pointer) && !pointer.endsWith('/$ref'));
      expect(
        lost.filter((pointer) => !droppable(pointer)),
        `${op.name}: dropped keywords`,
      ).toEqual([]);
    }

    // Ajv in strict mode compiles it: no keyword is unknown to it, so none is silently ignored.
    expect(() => createAjv(doc, { useDefaults: true }).compile(merged)).not.toThrow();
  });

  it('the body schemas all close the object (a union body: each of its branches) and lose nothing in the merge', () => {
    // A body someone else writes stays open: Stripe adds event fields, and a refused delivery is
    // retried until Stripe disables the endpoint.
    const OPEN_BODIES = ['auth.stripe.webhook'];
    for (const op of operations) {
      const { body } = inputSchemasOf(doc, op);
      if (!body) continue;
      if (OPEN_BODIES.includes(op.name)) {
        expect(body.additionalProperties, op.name).toBe(true);
        continue;
      }
      const branches = body.oneOf ? (body.oneOf as Json[]).map((branch) => deref(doc, branch)) : [body];
      for (const branch of branches) expect(branch.additionalProperties, op.name).toBe(false);
    }
  });

  it('every route table row lists the date inputs its contract declares', () => {
    for (const op of operations) {
      expect(table[op.name]!.dateInputs, op.name).toEqual(dateInputs(doc, op.name, op.inputSchema));
      // The one input that declares date-times today: documents.search's created-at filters.
      expect(table[op.name]!.dateInputs, op.name).toEqual(
        op.name === 'documents.search'
          ? [
              ['filters', 'createdAfter'],
              ['filters', 'createdBefore'],
            ]
          : [],
      );
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
    anyOf: [
      { properties: { a: true }, required: ['a'] },
      { properties: { b: true }, required: ['b'] },
    ],
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
    ['an in-place $ref whose target counts properties', { ...body, allOf: [{ $ref: '#/components/schemas/Counted' }] }],
    ['an in-place $ref that applies itself', { ...body, allOf: [{ $ref: '#/components/schemas/Itself' }] }],
  ])('refuses %s beside parameters rather than let it count them', (_what, schema) => {
    const withTargets = {
      components: { schemas: { ...doc.components.schemas, Counted: { type: 'object', minProperties: 1 }, Itself: { additionalProperties: false, allOf: [{ $ref: '#/components/schemas/Itself' }] } } },
    };
    expect(() => mergeInputSchema(withTargets, 'x', { id: { type: 'string' } }, [], schema)).toThrow(/parameters|itself/);
    expect(() => mergeInputSchema(withTargets, 'x', {}, [], schema)).not.toThrow();
  });

  it('inlines an in-place $ref that closes the object beside parameters, and exempts the copy', () => {
    const merged = mergeInputSchema(doc, 'x', { id: { type: 'string' } }, [], { ...body, allOf: [{ $ref: '#/components/schemas/Closed', description: 'closed' }] });
    expect(merged.allOf).toEqual([{ type: 'object', additionalProperties: false, description: 'closed', properties: { id: true } }]);
    expect(doc.components.schemas.Closed).toEqual({ type: 'object', additionalProperties: false });
  });
});

describe('mergeInputSchema with a discriminated union body (jobs.create)', () => {
  const doc = {
    components: {
      schemas: {
        A: { type: 'object', required: ['kind', 'a'], additionalProperties: false, properties: { kind: { type: 'string', const: 'a' }, a: { type: 'string' } } },
        B: { type: 'object', required: ['kind'], additionalProperties: false, properties: { kind: { type: 'string', const: 'b' }, b: { type: 'integer' } } },
      },
    },
  };
  const union = {
    oneOf: [{ $ref: '#/components/schemas/A' }, { $ref: '#/components/schemas/B' }],
    discriminator: { propertyName: 'kind', mapping: { a: '#/components/schemas/A', b: '#/components/schemas/B' } },
  };
  // ValidateFunction, the synchronous kind: ReturnType<compile> would pick the async overload.
  const issues = (validate: ValidateFunction, value: unknown) => {
    validate(value);
    return (validate.errors ?? []).filter((error) => error.keyword !== 'if').map((error) => [error.instancePath, error.keyword, error.params.additionalProperty ?? error.params.missingProperty ?? '']);
  };

  it('keeps the union as it is and does not close the top (its branches do)', () => {
    const merged = mergeInputSchema(doc, 'x', {}, [], union);
    expect(merged).toEqual({ ...union, type: 'object', properties: {}, required: [] });
    const validate = createAjv(doc as Json, { useDefaults: false }).compile(toAjvSchema(merged) as Json);
    expect(validate({ kind: 'a', a: 'x' })).toBe(true);
    expect(validate({ kind: 'b', b: 1 })).toBe(true);
    // The errors of the branch the tag picks, and a bad or missing tag at the tag.
    expect(issues(validate, { kind: 'b', a: 'x' })).toEqual([['', 'additionalProperties', 'a']]);
    expect(issues(validate, { kind: 'a' })).toEqual([['', 'required', 'a']]);
    expect(issues(validate, { kind: 'c' })).toEqual([['/kind', 'enum', '']]);
    expect(issues(validate, { a: 'x' })).toEqual([['', 'required', 'kind']]);
  });

  it('with parameters: inlines the branches, exempts the parameters in the copies, and still picks the branch by its tag', () => {
    const merged = mergeInputSchema(doc, 'x', { id: { type: 'string' } }, ['id'], union);
    expect(merged.required).toEqual(['id']);
    expect(merged.oneOf.map((branch: Json) => branch.properties.id)).toEqual([true, true]);
    expect(doc.components.schemas.A.properties).not.toHaveProperty('id');
    const validate = createAjv(doc as Json, { useDefaults: false }).compile(toAjvSchema(merged) as Json);
    expect(validate({ id: 'x', kind: 'a', a: 'y' })).toBe(true);
    expect(validate({ kind: 'a', a: 'y' })).toBe(false);
    expect(issues(validate, { id: 'x', kind: 'b', a: 'y' })).toEqual([['', 'additionalProperties', 'a']]);
    expect(issues(validate, { id: 'x', kind: 'b', b: 1, extra: 1 })).toEqual([['', 'additionalProperties', 'extra']]);
  });
});

describe('toAjvSchema: a discriminated oneOf validates as the oneOf does', () => {
  /** Every discriminated oneOf of both contracts, where it is, with the values that test it. */
  const unions = documents.flatMap(([file, doc]) => {
    const found: [string, Json, Json][] = [];
    const visit = (node: unknown, at: string) => {
      if (node === null || typeof node !== 'object') return;
      if (Array.isArray(node)) return node.forEach((child, i) => visit(child, `${at}/${i}`));
      const schema = node as Json;
      if (schema.discriminator && schema.oneOf) found.push([`${file} ${at}`, doc, schema]);
      for (const [key, child] of Object.entries(schema)) if (key !== 'examples' && key !== 'example') visit(child, `${at}/${key}`);
    };
    visit(doc.paths, '#/paths');
    visit(doc.components, '#/components');
    return found;
  });

  it('finds them (jobs.create, the stream events, the 403s)', () => {
    expect(unions.map(([at]) => at)).toEqual(expect.arrayContaining(['openapi.yaml #/components/schemas/JobsCreateInput', 'openapi.yaml #/components/schemas/JobsStreamMessage']));
  });

  it.each(unions.map(([at, doc, schema]) => [at, doc, schema] as const))('%s', (_at, doc, schema) => {
    const rewritten = toAjvSchema(schema) as Json;
    expect(rewritten.oneOf, 'compiled as one if/then per branch').toBeUndefined();
    const ajv = createAjv(doc, { useDefaults: false });
    const asRewritten = ajv.compile(rewritten);
    const { discriminator: _d, ...plain } = schema;
    const asOneOf = ajv.compile(toAjvSchema(plain) as Json);
    // Every branch's examples, each also with its tag swapped for every other branch's and with
    // the tag missing: both compilations agree on all of them.
    const tag: string = schema.discriminator.propertyName;
    const branches = (schema.oneOf as Json[]).map((branch) => deref(doc, branch));
    const tags = branches.map((branch) => branch.properties[tag].const as string);
    const values = branches.flatMap((branch) => (branch.examples ?? []) as Json[]);
    expect(values.length, 'each branch has an example').toBeGreaterThanOrEqual(branches.length);
    const variants = values.flatMap((value) => [
      value,
      ...tags.map((t) => ({ ...value, [tag]: t })),
      { ...value, [tag]: 'unknown' },
      Object.fromEntries(Object.entries(value).filter(([key]) => key !== tag)),
    ]);
    for (const value of variants) expect(asRewritten(structuredClone(value)), JSON.stringify(value)).toBe(asOneOf(structuredClone(value)));
    for (const value of values) expect(asRewritten(structuredClone(value))).toBe(true);
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
    expect(dateInputs(doc, 'x', schema)).toEqual([['at'], ['byKey', ANY], ['until'], ['window', 'from'], ['window', 'to'], ['windows', ANY, 'from'], ['windows', ANY, 'to']]);
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
      // The media types' own examples (what Prism answers with first), of bodies and answers.
      const contents: [string, Json][] = [
        ...(operation.requestBody ? [[`${method} ${path} body`, deref(doc, operation.requestBody).content ?? {}] as [string, Json]] : []),
        ...Object.entries<Json>(operation.responses ?? {}).map(([status, response]) => [`${method} ${path} ${status}`, deref(doc, response).content ?? {}] as [string, Json]),
      ];
      for (const [at, content] of contents) {
        for (const [type, media] of Object.entries<Json>(content)) {
          // A text/event-stream example is the wire text, not one message: a test below checks it event by event.
          if (media.example !== undefined && type !== 'text/event-stream') examples.push([`${at} ${type} (example)`, media.schema, media.example]);
          for (const [name, example] of Object.entries<Json>(media.examples ?? {})) examples.push([`${at} ${type} (examples.${name})`, media.schema, deref(doc, example).value]);
        }
      }
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

describe('the jobs examples tell one story', () => {
  const doc = v1Document as Json;
  const operation = (name: string) => {
    const { path, method } = procedures[name as keyof typeof procedures];
    return doc.paths[path][method.toLowerCase()] as Json;
  };
  /**
   * The example of one JSON answer of an operation. A media type's `example` is what Prism answers
   * with (it ranks the schema's first example above named `examples`), so each jobs answer has one.
   */
  const answer = (name: string, status: string): any => {
    const media = deref(doc, operation(name).responses[status]).content['application/json'];
    expect(media.examples, `${name} ${status}: one example, the one Prism answers`).toBeUndefined();
    expect(media.example, `${name} ${status}`).toBeDefined();
    return media.example;
  };
  const only = (name: string) => answer(name, '200');
  /** The stream's examples, one per event. */
  /** Each stream message component's example, by event name. */
  const streamExamples = (): Record<string, any> => {
    const messages = { ready: 'StreamReadyMessage', job: 'StreamJobMessage', end: 'StreamEndMessage', error: 'StreamErrorMessage' };
    return Object.fromEntries(Object.entries(messages).map(([event, schema]) => [event, doc.components.schemas[schema].examples[0]]));
  };
  const pathId = (name: string) => deref(doc, operation(name).parameters[0]).example;

  it('jobs.create answers a queued job; jobs.get the same job, failed; jobs.retry a new queued job naming it; jobs.cancel a canceled one', () => {
    const created = only('jobs.create');
    const failed = only('jobs.get');
    const retried = only('jobs.retry');
    const canceled = only('jobs.cancel');
    expect(created).toMatchObject({ status: 'queued', attempt: 0, startedAt: null, finishedAt: null, retryOf: null });
    expect(created).not.toHaveProperty('input');
    expect(failed).toMatchObject({ id: created.id, kind: created.kind, documentId: created.documentId, status: 'failed', error: { message: expect.any(String) } });
    expect(pathId('jobs.get')).toBe(failed.id);
    expect(pathId('jobs.retry')).toBe(failed.id);
    expect(retried).toMatchObject({ status: 'queued', kind: failed.kind, documentId: failed.documentId, retryOf: failed.id, input: { retryOf: failed.id } });
    expect(retried.id).not.toBe(failed.id);
    expect(canceled).toMatchObject({ status: 'canceled', startedAt: null, finishedAt: expect.any(String) });
    expect(pathId('jobs.cancel')).toBe(canceled.id);
    // The body example jobs.create answers for is the first of the body schema's examples.
    const body = deref(doc, operation('jobs.create').requestBody.content['application/json'].schema).examples[0];
    expect(created).toMatchObject({ organizationId: body.organizationId, kind: body.kind, documentId: body.documentId });
  });

  it('jobs.list, the Job, JobPage and stream examples are the same jobs', () => {
    const failed = only('jobs.get');
    const retried = only('jobs.retry');
    const canceled = only('jobs.cancel');
    const page = only('jobs.list');
    expect(page.items.map((job: Json) => job.id)).toEqual([canceled.id, retried.id, failed.id]);
    expect(page.items[0]).toEqual(canceled);
    expect(page.items[2]).toEqual(failed);
    expect(page.items[1]).toMatchObject({ ...retried, status: 'succeeded', startedAt: expect.any(String), finishedAt: expect.any(String), updatedAt: expect.any(String), attempt: 1 });
    expect(doc.components.schemas.JobPage.examples[0]).toEqual(page);
    expect(doc.components.schemas.Job.examples[0]).toMatchObject({ ...page.items[1], result: expect.anything() });
    expect(Object.keys(streamExamples())).toEqual(['ready', 'job', 'end', 'error']);
    const job = streamExamples().job;
    expect(job.data).toMatchObject({ id: failed.id, status: 'running' });
    expect(doc.components.schemas.JobEvent.examples[0]).toEqual(job.data);
  });

  it('uses the ids of the rest of the contract', () => {
    const ids = JSON.stringify(['jobs.create', 'jobs.get', 'jobs.retry', 'jobs.cancel', 'jobs.list'].map(only));
    for (const id of ['org_pycdybk377oxtzq6svizx3or', 'ws_i5xx2bzn3kir2gshyl7sn5pk', 'doc_zjli6ufh3reosfhypn5nwk2d', 'job_s6kc6o6oya7vngcngsuu4stu', 'usr_o7nzqdg4w5lltzqli3n4fvu2'])
      expect(ids).toContain(id);
    expect(ids.match(/\b(org|ws|doc|usr)_[a-z2-7]+/g)!.every((id) => JSON.stringify(doc.components.schemas).includes(id))).toBe(true);
  });
});

describe('jobs.stream: the events are typed, and the wire example is valid SSE', () => {
  const doc = v1Document as Json;
  const { path, method, events } = procedures['jobs.stream'];
  const response = doc.paths[path][method.toLowerCase()].responses['200'];

  it('declares each event as a named message component, and the route row maps the same', () => {
    const union = deref(doc, response.content['text/event-stream'].schema);
    expect(response.content['text/event-stream'].schema).toEqual({ $ref: '#/components/schemas/JobsStreamMessage' });
    expect(events).toEqual({ ready: 'StreamReadyMessage', job: 'StreamJobMessage', end: 'StreamEndMessage', error: 'StreamErrorMessage' });
    expect(streamEvents(doc, 'jobs.stream', response.content['text/event-stream'].schema)).toEqual(events);
    const data = Object.fromEntries(Object.entries(events).map(([event, component]) => [event, doc.components.schemas[component].properties.data.$ref]));
    expect(data).toEqual({
      ready: '#/components/schemas/StreamReadyEvent',
      job: '#/components/schemas/JobEvent',
      end: '#/components/schemas/StreamEndEvent',
      error: '#/components/schemas/TooManyRequestsError',
    });
    expect(union.discriminator.propertyName).toBe('event');
    // Only job events carry an id, and they must.
    expect(doc.components.schemas.StreamJobMessage.required).toContain('id');
    for (const component of ['StreamReadyMessage', 'StreamEndMessage', 'StreamErrorMessage']) expect(doc.components.schemas[component].properties).not.toHaveProperty('id');
  });

  it('refuses an event-stream answer that is not a oneOf of message components', () => {
    const schemas = { M: { type: 'object', required: ['event', 'data'], additionalProperties: false, properties: { event: { const: 'm' }, data: {} } } };
    const at = (extra: Json) => ({ components: { schemas: { ...schemas, ...extra } } });
    expect(streamEvents(at({}), 'x', { oneOf: [{ $ref: '#/components/schemas/M' }] })).toEqual({ m: 'M' });
    expect(() => streamEvents(at({}), 'x', { type: 'string' })).toThrow(/oneOf/);
    expect(() => streamEvents(at({}), 'x', { oneOf: [schemas.M] })).toThrow(/\$ref/);
    expect(() => streamEvents(at({ N: { ...schemas.M, properties: { event: { type: 'string' }, data: {} } } }), 'x', { oneOf: [{ $ref: '#/components/schemas/N' }] })).toThrow(/const/);
    expect(() => streamEvents(at({ N: { ...schemas.M, properties: { ...schemas.M.properties, retry: {} } } }), 'x', { oneOf: [{ $ref: '#/components/schemas/N' }] })).toThrow(/retry/);
    expect(() => streamEvents(at({}), 'x', { oneOf: [{ $ref: '#/components/schemas/M' }, { $ref: '#/components/schemas/M' }] })).toThrow(/twice/);
    expect(() => streamEvents(at({}), 'x', { oneOf: [{ $ref: '#/components/schemas/M' }], discriminator: { propertyName: 'event', mapping: { n: '#/components/schemas/M' } } })).toThrow(/mapping/);
  });

  it('the wire example in the description: every event ends with a blank line and matches its message schema', () => {
    const wire = /```text\n([\s\S]*?)```/.exec(response.description)?.[1];
    expect(wire).toBeDefined();
    expect(wire!.endsWith('\n\n')).toBe(true);
    expect(wire!.startsWith('retry: 3000\n\n')).toBe(true);
    // WHATWG HTML: an event is dispatched at a blank line, when it has data; an id carries over.
    const dispatched: { event: string; id?: string; data: unknown }[] = [];
    let block: { event?: string; id?: string; data: string[] } = { data: [] };
    for (const line of wire!.split('\n').slice(0, -1)) {
      if (line === '') {
        if (block.data.length > 0) dispatched.push({ event: block.event ?? 'message', ...(block.id === undefined ? {} : { id: block.id }), data: JSON.parse(block.data.join('\n')) });
        block = { data: [] };
        continue;
      }
      if (line.startsWith(':')) continue;
      const [field, ...rest] = line.split(':');
      const value = rest.join(':').replace(/^ /, '');
      if (field === 'data') block.data.push(value);
      else if (field === 'event' || field === 'id') block[field] = value;
      else expect(field).toBe('retry');
    }
    expect(block.data).toEqual([]);
    expect(dispatched.map((e) => e.event)).toEqual(['ready', 'job', 'job', 'job', 'end']);
    const ajv = createAjv(doc, { useDefaults: false });
    for (const message of dispatched) {
      const validate = ajv.getSchema(`https://contract.local/schemas/${(events as Record<string, string>)[message.event]}`)!;
      expect(validate(message), `${message.event}: ${JSON.stringify(validate.errors)}`).toBe(true);
    }
    // The same jobs as the other jobs examples: the created job runs and fails, its retry is queued.
    const [, running, failed, retried] = dispatched as { data: Json }[];
    expect(running!.data).toEqual(doc.components.schemas.JobEvent.examples[0]);
    expect(failed!.data).toMatchObject({ id: running!.data.id, status: 'failed' });
    expect(retried!.data).toMatchObject({ status: 'queued', retryOf: running!.data.id });
  });
});

describe('the generated validators refuse what the contract refuses', () => {
  const ORG = 'org_pycdybk377oxtzq6svizx3or';
  const DOC = 'doc_zjli6ufh3reosfhypn5nwk2d';
  const path = (issues: { path: (string | number)[] }[]) => issues.map((issue) => issue.path.join('.'));

  it.each([
    // jobs.create's kind rules (the body's discriminated oneOf) hold, each refusal named by the
    // one field at fault, whatever the other branches would have said.
    ['jobs.create', { organizationId: ORG, kind: 'text.embed', input: { texts: ['a'] }, documentId: DOC }, ['documentId']],
    ['jobs.create', { organizationId: ORG, kind: 'text.embed' }, ['input']],
    ['jobs.create', { organizationId: ORG, kind: 'text.embed', documentId: DOC }, ['input', 'documentId']],
    ['jobs.create', { organizationId: ORG, kind: 'document.index' }, ['documentId']],
    ['jobs.create', { organizationId: ORG, kind: 'document.index', documentId: DOC, input: { texts: ['a'] } }, ['input']],
    ['jobs.create', { organizationId: ORG, kind: 'document.extract', documentId: DOC, input: {} }, ['input']],
    ['jobs.create', { organizationId: ORG, kind: 'document.extract', documentId: DOC }, []],
    ['jobs.create', { organizationId: ORG, kind: 'document.index', documentId: DOC }, []],
    ['jobs.create', { organizationId: ORG, kind: 'document.extract', documentId: 'doc_1' }, ['documentId']],
    ['jobs.create', { organizationId: ORG, kind: 'image.render', documentId: DOC }, ['kind']],
    ['jobs.create', { organizationId: ORG, documentId: DOC }, ['kind']],
    ['jobs.create', { kind: 'document.extract', documentId: DOC }, ['organizationId']],
    ['jobs.create', { organizationId: ORG, kind: 'text.embed', input: { texts: ['line one\nline\ttwo'] } }, []],
    ['jobs.create', { organizationId: ORG, kind: 'text.embed', input: { texts: [] } }, ['input.texts']],
    ['jobs.create', { organizationId: ORG, kind: 'text.embed', input: { texts: [''] } }, ['input.texts.0']],
    ['jobs.create', { organizationId: ORG, kind: 'text.embed', input: { texts: ['a'], extra: 1 } }, ['input.extra']],
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

  it('jobs.create keeps the bounds of text.embed: 1 to 64 texts of 1 to 8000 characters', () => {
    const embed = (texts: string[]) => path(issuesOf('jobs.create', { organizationId: ORG, kind: 'text.embed', input: { texts } }));
    expect(embed(Array(64).fill('x'.repeat(8000)))).toEqual([]);
    expect(embed(Array(65).fill('a'))).toEqual(['input.texts']);
    expect(embed(['x'.repeat(8001)])).toEqual(['input.texts.0']);
  });

  describe('organization metadata: any JSON four levels deep, with no NUL or lone surrogate in a key or a string', () => {
    const update = (metadata: unknown) => issuesOf('auth.organization.update', { organizationId: ORG, data: { metadata } });
    it.each([
      [{ industry: 'aerospace', founded: 1843, public: false, tags: ['ai', { nested: [1, 'two\nlines', null] }], emoji: '\u{1f680}' }],
      [null],
      [{}],
      [{ a: { b: [{ d: 'four levels below the object' }] } }],
    ])('accepts %j', (metadata) => expect(update(metadata)).toEqual([]));
    it.each([
      [{ industry: 'aero\u0000space' }, 'data.metadata.industry'],
      [{ 'bad\u0000key': 1 }, 'data.metadata'],
      [{ tags: ['ok', 'no\u0000'] }, 'data.metadata.tags.1'],
      [{ a: { b: [{ c: 'x\u0000' }] } }, 'data.metadata.a.b.0.c'],
      [{ a: { 'k\u0000': true } }, 'data.metadata.a'],
      [{ lone: 'x\ud800' }, 'data.metadata.lone'],
      [['not', 'an object'], 'data.metadata'],
      // A fifth level: the schema is written out level by level so generators can type it.
      [{ a: { b: [{ d: ['five'] }] } }, 'data.metadata.a.b.0.d'],
    ])('refuses %j', (metadata, at) => {
      expect(path(update(metadata))).toContain(at);
    });
  });
});
