/**
 * Reads the bundled contract into one record per procedure: its route, declared access, declared
 * error codes, where each input field comes from, and the merged input schema that both
 * transports validate (REST path + query + body fields, RPC's single input object).
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
  inputSchema: Json;
  outputSchema: Json | undefined;
}

const METHODS = ['get', 'put', 'post', 'patch', 'delete'] as const;

export function readOperations(doc: Json): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries<Json>(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (op) operations.push(readOperation(doc, path, method, op, item.parameters ?? []));
    }
  }
  return operations.sort((a, b) => a.name.localeCompare(b.name));
}

function readOperation(doc: Json, path: string, method: string, op: Json, shared: Json[]): Operation {
  const name: string = op.operationId;
  if (!name) throw new Error(`${method.toUpperCase()} ${path} has no operationId`);
  if (op['x-access'] === undefined) throw new Error(`${name} declares no x-access`);

  const properties: Json = {};
  const required: string[] = [];
  const fields: InputField[] = [];
  for (const ref of [...shared, ...(op.parameters ?? [])]) {
    const param = deref(doc, ref);
    if (param.in === 'header' || param.in === 'cookie') {
      fields.push({ name: param.name, in: 'header' });
      continue;
    }
    const schema = deref(doc, param.schema);
    properties[param.name] = param.schema;
    if (param.required) required.push(param.name);
    fields.push({ name: param.name, in: param.in, type: scalarType(schema) });
  }

  const body = op.requestBody && deref(doc, op.requestBody).content?.['application/json']?.schema;
  if (body) {
    const bodySchema = deref(doc, body);
    if (bodySchema.type !== 'object') throw new Error(`${name}: request bodies must be objects`);
    for (const [key, value] of Object.entries<Json>(bodySchema.properties ?? {})) {
      if (key in properties) throw new Error(`${name}: body field ${key} clashes with a parameter`);
      properties[key] = value;
      fields.push({ name: key, in: 'body' });
    }
    required.push(...(bodySchema.required ?? []));
  }

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
    inputSchema: { type: 'object', properties, required, additionalProperties: false },
    outputSchema: produces === 'json' ? content['application/json']?.schema : undefined,
  };
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
