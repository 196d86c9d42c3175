/**
 * Reads the bundled contract into one record per procedure: its route, declared access, declared
 * error codes, where each input field comes from, the input paths that hold dates, and the merged
 * input schema that both transports validate (REST path + query + body fields, RPC's single input
 * object).
 *
 * Each part has a file of its own: input-schema.ts (the merge), date-inputs.ts, stream-events.ts
 * (an event-stream procedure's route row maps each event name to its message component, which the
 * server's stream check and the typed client read), deref.ts.
 */
import { deref, IN_PLACE_LIST, type Json } from './deref.ts';
import { dateInputs } from './date-inputs.ts';
import { mergeInputSchema } from './input-schema.ts';
import { streamEvents } from './stream-events.ts';

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
  /** It declares the Idempotency-Key request header (see ProcedureDefinition.idempotent). */
  idempotent?: true;
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

/**
 * The request header that makes an operation idempotent (docs/idempotency.md). An operation is
 * idempotent exactly when it declares it: the route row says so, and the binding layer reads the
 * header on those operations only, so the contract stays the one list.
 */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';

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
      if (!(METHODS as readonly string[]).includes(method))
        throw new Error(`${method.toUpperCase()} ${path}: a procedure is GET, PUT, POST, PATCH or DELETE (mark a route the HTTP layer serves itself with x-transport)`);
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
  let idempotent = false;
  for (const ref of [...shared, ...(op.parameters ?? [])]) {
    const param = deref(doc, ref);
    if (param.in === 'header' && String(param.name).toLowerCase() === IDEMPOTENCY_KEY_HEADER.toLowerCase()) {
      if (param.name !== IDEMPOTENCY_KEY_HEADER || param.required) throw new Error(`${name}: declare the optional ${IDEMPOTENCY_KEY_HEADER} header with components/parameters/IdempotencyKeyHeader.yaml`);
      idempotent = true;
    }
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
  // A replay answers the stored body of one JSON answer; a stream has none to keep.
  if (idempotent && produces !== 'json') throw new Error(`${name}: an event stream cannot take an ${IDEMPOTENCY_KEY_HEADER}`);

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
    ...(idempotent ? { idempotent: true as const } : {}),
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
