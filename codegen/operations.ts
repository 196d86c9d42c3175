/**
 * Reads the bundled contract into one record per procedure: its route, declared access, declared
 * error codes, where each input field comes from, the input paths that hold dates, and the merged
 * input schema that both transports validate (REST path + query + body fields, RPC's single input
 * object).
 *
 * The merged input schema is the body schema with every one of its keywords (allOf, if/then/else,
 * oneOf with its discriminator, dependentRequired, unevaluatedProperties, ...), plus the path and
 * query parameters as extra properties beside the body's. Conditions on body fields keep working
 * because the merged object holds those fields at the top level, as the body did.
 *
 * An event-stream procedure's answer is a `oneOf` of named message components, each an object with
 * `event` (a const), optionally `id`, and `data`: its route row maps each event name to that
 * component (`events`), which both the server's stream check and the typed client read.
 */
type Json = Record<string, any>;

export type { Access, InputField } from '../src/contract/procedure-definition.ts';
import type { Access, InputField } from '../src/contract/procedure-definition.ts';

export interface Operation {
  name: string;
  group: string;
  method: string;
  path: string;
  access: Access;
  errors: string[];
  fields: InputField[];
  hasBody: boolean;
  successStatus: number;
  /** 'json' or 'event-stream', from the 2xx response's media type. */
  produces: 'json' | 'event-stream';
  /** Paths of the input's `format: date-time` fields (see ProcedureDefinition.dateInputs). */
  dateInputs: string[][];
  /** Event-stream procedures: each event name and the component schema of its message. */
  events?: Record<string, string>;
  inputSchema: Json;
  outputSchema: Json | undefined;
}

const METHODS = ['get', 'put', 'post', 'patch', 'delete'] as const;
const OTHER_METHODS = ['head', 'options', 'trace'] as const;

/**
 * `x-transport` marks an operation of the contract that is not a procedure: a route the HTTP layer
 * serves itself, with its own bodies (today `uploads`: the local storage driver's signed
 * `/uploads/{organizationId}/{documentId}` PUT, GET and HEAD, src/storage/upload-routes.ts). Such
 * an operation is published (documented, linted, mocked) but gets no route-table row, no RPC
 * route, no validators and no client method, and the REST router skips it.
 */
export const TRANSPORTS = ['uploads'] as const;

/** Whether an operation object of the contract is a procedure (it has no `x-transport`). */
export function isProcedure(op: Json): boolean {
  return op['x-transport'] === undefined;
}

export function readOperations(doc: Json): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries<Json>(doc.paths)) {
    for (const method of [...METHODS, ...OTHER_METHODS]) {
      const op = item[method];
      if (!op) continue;
      if (!isProcedure(op)) {
        if (!(TRANSPORTS as readonly unknown[]).includes(op['x-transport'])) throw new Error(`${op.operationId}: unknown x-transport ${JSON.stringify(op['x-transport'])}`);
        continue;
      }
      if (!(METHODS as readonly string[]).includes(method)) throw new Error(`${method.toUpperCase()} ${path}: a procedure is GET, PUT, POST, PATCH or DELETE (mark a route the HTTP layer serves itself with x-transport)`);
      operations.push(readOperation(doc, path, method, op, item.parameters ?? []));
    }
  }
  return operations.sort((a, b) => a.name.localeCompare(b.name));
}

function readOperation(doc: Json, path: string, method: string, op: Json, shared: Json[]): Operation {
  const name: string = op.operationId;
  if (!name) throw new Error(`${method.toUpperCase()} ${path} has no operationId`);
  if (op['x-access'] === undefined) throw new Error(`${name} declares no x-access`);

  const parameters: Json = {};
  const parametersRequired: string[] = [];
  const fields: InputField[] = [];
  for (const ref of [...shared, ...(op.parameters ?? [])]) {
    const param = deref(doc, ref);
    if (param.in === 'header' || param.in === 'cookie') {
      fields.push({ name: param.name, in: 'header' });
      continue;
    }
    const schema = deref(doc, param.schema);
    parameters[param.name] = param.schema;
    if (param.required) parametersRequired.push(param.name);
    fields.push({ name: param.name, in: param.in, type: scalarType(schema) });
  }

  const body = op.requestBody && deref(doc, op.requestBody).content?.['application/json']?.schema;
  const bodySchema = body ? deref(doc, body) : undefined;
  if (bodySchema) {
    if (!isObjectSchema(doc, bodySchema)) throw new Error(`${name}: request bodies must be objects (or a oneOf/anyOf of objects)`);
    for (const key of bodyFieldNames(doc, bodySchema)) {
      if (key in parameters) throw new Error(`${name}: body field ${key} clashes with a parameter`);
      fields.push({ name: key, in: 'body' });
    }
  }
  const inputSchema = mergeInputSchema(doc, name, parameters, parametersRequired, bodySchema);

  // The success answer: the 2xx, or for a route that only redirects (the OAuth callback) its 3xx.
  const entries = Object.entries<Json>(op.responses);
  const found = entries.find(([status]) => status.startsWith('2')) ?? entries.find(([status]) => status.startsWith('3'));
  if (!found) throw new Error(`${name} declares no 2xx or 3xx answer`);
  const [successStatus, success] = found;
  const content = deref(doc, success).content ?? {};
  const produces = content['text/event-stream'] ? 'event-stream' : 'json';

  return {
    name,
    group: op.tags?.[0] ?? name.split('.')[0],
    method: method.toUpperCase(),
    path,
    access: op['x-access'],
    errors: declaredErrors(doc, op.responses),
    fields,
    hasBody: Boolean(body),
    successStatus: Number(successStatus),
    produces,
    dateInputs: dateInputs(doc, name, inputSchema),
    ...(produces === 'event-stream' ? { events: streamEvents(doc, name, content['text/event-stream'].schema) } : {}),
    inputSchema,
    outputSchema: produces === 'json' ? content['application/json']?.schema : undefined,
  };
}

/**
 * A body is an object schema, or a union (oneOf/anyOf) whose every branch is one: the discriminated
 * bodies SDK generators turn into tagged unions (jobs.create).
 */
function isObjectSchema(doc: Json, schema: Json, path: ReadonlySet<Json> = new Set()): boolean {
  if (path.has(schema)) return false;
  if (schema.type === 'object') return true;
  if (schema.type !== undefined) return false;
  const union: Json[] | undefined = schema.oneOf ?? schema.anyOf;
  const inner = new Set([...path, schema]);
  return Array.isArray(union) && union.length > 0 && union.every((branch) => isObjectSchema(doc, deref(doc, branch), inner));
}

/** The body's field names: its own properties and those of every branch of its oneOf/anyOf/allOf. */
function bodyFieldNames(doc: Json, schema: Json, seen = new Set<Json>()): string[] {
  if (seen.has(schema)) return [];
  seen.add(schema);
  const names = new Set(Object.keys(schema.properties ?? {}));
  for (const keyword of IN_PLACE_LIST) {
    for (const branch of schema[keyword] ?? []) for (const key of bodyFieldNames(doc, deref(doc, branch), seen)) names.add(key);
  }
  return [...names];
}

/** The component that names each message of an event stream: `#/components/schemas/<Name>`. */
const COMPONENT = /^#\/components\/schemas\/([^/]+)$/;

/**
 * The events of an event-stream answer: its schema must be a `oneOf` (directly or through one
 * $ref) of component refs, each an object whose `event` is a `const`, with a `data` property and
 * at most an `id` besides. Answers `{ <event>: <component> }`; a discriminator mapping, when
 * present, must say the same.
 */
export function streamEvents(doc: Json, name: string, schema: Json | undefined): Record<string, string> {
  const union = schema && deref(doc, schema);
  if (!Array.isArray(union?.oneOf)) throw new Error(`${name}: a text/event-stream answer must be a oneOf of message components`);
  const events: Record<string, string> = {};
  for (const branch of union.oneOf) {
    const component = typeof branch.$ref === 'string' ? COMPONENT.exec(branch.$ref)?.[1] : undefined;
    if (!component) throw new Error(`${name}: each event of the stream must be a $ref to a component schema`);
    const message = deref(doc, branch);
    const event = message.properties?.event?.const;
    if (message.type !== 'object' || typeof event !== 'string') throw new Error(`${name}: ${component} must be an object whose event is a const`);
    if (!message.properties?.data || !(message.required ?? []).includes('data')) throw new Error(`${name}: ${component} must require data`);
    const extra = Object.keys(message.properties).filter((key) => !['event', 'id', 'data'].includes(key));
    if (extra.length > 0) throw new Error(`${name}: ${component} has properties an SSE event cannot carry: ${extra.join(', ')}`);
    if (message.additionalProperties !== false) throw new Error(`${name}: ${component} must close the object`);
    if (event in events) throw new Error(`${name}: the event ${event} is declared twice`);
    events[event] = component;
  }
  const mapping: Json | undefined = union.discriminator?.mapping;
  if (union.discriminator && union.discriminator.propertyName !== 'event') throw new Error(`${name}: the stream's discriminator must be event`);
  if (mapping) {
    const mapped = Object.fromEntries(Object.entries<string>(mapping).map(([event, ref]) => [event, COMPONENT.exec(ref)?.[1]]));
    if (JSON.stringify(Object.entries(mapped).sort()) !== JSON.stringify(Object.entries(events).sort())) {
      throw new Error(`${name}: the stream's discriminator mapping does not match its oneOf`);
    }
  }
  return events;
}

/**
 * Keywords whose subschemas validate the same object as the schema they sit in (in-place
 * applicators): the merged input's parameters are visible to them too.
 */
const IN_PLACE_SCHEMA = ['not', 'if', 'then', 'else'] as const;
const IN_PLACE_LIST = ['allOf', 'anyOf', 'oneOf'] as const;
/** Keywords that constrain the set of an object's property names or their number. */
const PROPERTY_SET = ['minProperties', 'maxProperties', 'propertyNames', 'patternProperties'] as const;

/**
 * The schema both transports validate: the body schema with all its keywords, plus the path and
 * query parameters as extra properties. An operation without a body gets an object of its
 * parameters; unknown fields are refused unless the body says otherwise. A union body (a
 * oneOf/anyOf of objects, as jobs.create's) is not closed at the top: its branches close it, and
 * closing the top too would refuse every field of the branches.
 *
 * With parameters present, the body's in-place subschemas (allOf/anyOf/oneOf/not/if/then/else,
 * dependentSchemas) must still see the object as the body alone: each one that closes the object
 * (additionalProperties or unevaluatedProperties) gets the parameter names as `name: true`
 * properties, which exempts them without constraining them. A `$ref` in such a place (a union's
 * named branches) that closes the object is inlined first, so its copy can be exempted; the
 * component itself is left alone. Keywords that count or match all property names
 * (minProperties, maxProperties, propertyNames, patternProperties) cannot be made blind to the
 * parameters, so codegen refuses them on a body that shares its input with parameters rather
 * than change their meaning.
 */
export function mergeInputSchema(doc: Json, name: string, parameters: Json, parametersRequired: string[], body: Json | undefined): Json {
  const { properties: bodyProperties = {}, required: bodyRequired = [], ...rest } = body ?? {};
  const union = Array.isArray(rest.oneOf) || Array.isArray(rest.anyOf);
  const closed = union || 'additionalProperties' in rest || 'unevaluatedProperties' in rest ? {} : { additionalProperties: false };
  const merged: Json = {
    ...structuredClone(rest),
    type: 'object',
    properties: { ...parameters, ...bodyProperties },
    required: [...new Set([...parametersRequired, ...bodyRequired])],
    ...closed,
  };
  const names = Object.keys(parameters);
  if (names.length > 0) {
    for (const keyword of PROPERTY_SET) {
      if (keyword in merged) throw new Error(`${name}: the body's ${keyword} would count the path and query parameters too; restructure the body schema`);
    }
    for (const sub of inPlaceSubschemas(merged)) exemptParameters(doc, name, sub, names);
  }
  return merged;
}

function inPlaceSubschemas(schema: Json): Json[] {
  const subs: Json[] = [];
  for (const keyword of IN_PLACE_SCHEMA) if (isSchemaObject(schema[keyword])) subs.push(schema[keyword]);
  for (const keyword of IN_PLACE_LIST) for (const sub of schema[keyword] ?? []) if (isSchemaObject(sub)) subs.push(sub);
  for (const sub of Object.values<Json>(schema.dependentSchemas ?? {})) if (isSchemaObject(sub)) subs.push(sub);
  return subs;
}

/** Annotations that may sit beside a `$ref` and that an inlined copy of its target may replace. */
const ANNOTATIONS = new Set(['description', 'summary', 'title', 'examples', 'example', 'deprecated', 'readOnly', 'writeOnly', '$comment']);

function exemptParameters(doc: Json, name: string, schema: Json, parameters: string[], refs: Set<string> = new Set()): void {
  if (typeof schema.$ref === 'string' && needsExemption(doc, deref(doc, schema), new Set([schema.$ref]))) {
    // Inline the closing component in place (this is the merged copy), then exempt the copy.
    const ref: string = schema.$ref;
    if (refs.has(ref)) throw new Error(`${name}: ${ref} applies itself in place; codegen cannot exempt the parameters from it`);
    refs = new Set([...refs, ref]);
    const target = structuredClone(deref(doc, schema));
    const { $ref: _ref, ...siblings } = schema;
    delete schema.$ref;
    if (Object.keys(siblings).every((key) => ANNOTATIONS.has(key))) Object.assign(schema, target, siblings);
    else schema.allOf = [...(schema.allOf ?? []), target];
  }
  for (const keyword of PROPERTY_SET) {
    if (keyword in schema) throw new Error(`${name}: a ${keyword} inside the body's allOf/anyOf/oneOf/not/if/then/else would see the path and query parameters too; restructure the body schema`);
  }
  const closes = (value: unknown) => value !== undefined && value !== true;
  if (closes(schema.additionalProperties) || closes(schema.unevaluatedProperties)) {
    const properties: Json = { ...(schema.properties ?? {}) };
    for (const parameter of parameters) if (!(parameter in properties)) properties[parameter] = true;
    schema.properties = properties;
  }
  for (const sub of inPlaceSubschemas(schema)) exemptParameters(doc, name, sub, parameters, refs);
}

function needsExemption(doc: Json, schema: Json, seen: Set<string>): boolean {
  if (!isSchemaObject(schema)) return false;
  if (typeof schema.$ref === 'string') {
    if (seen.has(schema.$ref)) return false;
    if (needsExemption(doc, deref(doc, schema), new Set([...seen, schema.$ref]))) return true;
  }
  const closes = (value: unknown) => value !== undefined && value !== true;
  if (closes(schema.additionalProperties) || closes(schema.unevaluatedProperties)) return true;
  if (PROPERTY_SET.some((keyword) => keyword in schema)) return true;
  return inPlaceSubschemas(schema).some((sub) => needsExemption(doc, sub, seen));
}

function isSchemaObject(value: unknown): value is Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The wildcard of a dateInputs path: any array index, or any key of a map (additionalProperties). */
export const ANY = '*';

/**
 * The paths of the input that the contract declares `format: date-time`: the only places where
 * RPC `meta` may turn a string into a Date. Follows properties, items, additionalProperties and
 * the in-place applicators (allOf/anyOf/oneOf/then/else, dependentSchemas) through $refs; an array
 * element or a map value is the wildcard `*`. `if` and `not` only test the input, so a date-time
 * there names no field.
 */
export function dateInputs(doc: Json, name: string, inputSchema: Json): string[][] {
  const found = new Map<string, string[]>();
  const visit = (node: unknown, path: string[], refs: Set<string>): void => {
    if (!isSchemaObject(node)) return;
    if (typeof node.$ref === 'string') {
      if (refs.has(node.$ref)) {
        if (containsDateTime(doc, deref(doc, node), new Set())) throw new Error(`${name}: a date-time inside the recursive schema ${node.$ref} has no finite path`);
      } else {
        visit(deref(doc, node), path, new Set([...refs, node.$ref]));
      }
    }
    if (node.format === 'date-time') {
      const types = node.type === undefined ? ['string'] : [node.type].flat();
      if (types.includes('string')) found.set(JSON.stringify(path), path);
    }
    for (const [key, child] of Object.entries<unknown>(node.properties ?? {})) {
      if (key === ANY) throw new Error(`${name}: an input property may not be named ${ANY} (the wildcard of dateInputs)`);
      visit(child, [...path, key], refs);
    }
    for (const keyword of ['items', 'additionalProperties', 'unevaluatedProperties', 'unevaluatedItems', 'contains']) visit(node[keyword], [...path, ANY], refs);
    for (const child of [...(node.prefixItems ?? []), ...Object.values<unknown>(node.patternProperties ?? {})]) visit(child, [...path, ANY], refs);
    for (const keyword of ['then', 'else'] as const) visit(node[keyword], path, refs);
    for (const keyword of IN_PLACE_LIST) for (const child of node[keyword] ?? []) visit(child, path, refs);
    for (const child of Object.values<unknown>(node.dependentSchemas ?? {})) visit(child, path, refs);
  };
  visit(inputSchema, [], new Set());
  return [...found.values()].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
}

function containsDateTime(doc: Json, node: unknown, refs: Set<string>): boolean {
  if (Array.isArray(node)) return node.some((child) => containsDateTime(doc, child, refs));
  if (!isSchemaObject(node)) return false;
  if (node.format === 'date-time') return true;
  if (typeof node.$ref === 'string' && !refs.has(node.$ref) && containsDateTime(doc, deref(doc, node), new Set([...refs, node.$ref]))) return true;
  return Object.entries(node).some(([key, child]) => key !== 'examples' && key !== 'default' && key !== 'const' && key !== 'enum' && containsDateTime(doc, child, refs));
}

/** The error codes a procedure declares: the `code` constants of its non-2xx response schemas. */
function declaredErrors(doc: Json, responses: Json): string[] {
  const codes = new Set<string>();
  for (const [status, response] of Object.entries<Json>(responses)) {
    if (status.startsWith('2')) continue;
    const schema = deref(doc, deref(doc, response).content?.['application/json']?.schema ?? {});
    for (const variant of schema.oneOf ?? [schema]) {
      const code = deref(doc, variant).properties?.code?.const;
      if (code) codes.add(code);
    }
  }
  return [...codes].sort();
}

function scalarType(schema: Json): InputField['type'] {
  const types = [schema.type].flat().filter((t) => t !== 'null');
  const type = types[0];
  return type === 'integer' || type === 'number' || type === 'boolean' ? type : 'string';
}

export function deref(doc: Json, value: Json): Json {
  let current = value;
  while (current && typeof current.$ref === 'string') {
    const ref: string = current.$ref;
    if (!ref.startsWith('#/')) throw new Error(`unexpected external $ref ${ref}`);
    current = ref.slice(2).split('/').reduce((node: Json, key) => node?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
    if (current === undefined) throw new Error(`unresolved $ref ${ref}`);
  }
  return current;
}
