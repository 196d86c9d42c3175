/**
 * A valid input for every procedure, built from the contract's own examples (parameter examples
 * and request-body examples). The contract promises realistic, consistent examples; this both
 * relies on and checks that promise.
 */
import document from '../../generated/openapi.json' with { type: 'json' };
import authDocument from '../../generated/auth-openapi.json' with { type: 'json' };
import type { ProcedureDefinition } from '../../generated/procedures.ts';
import { deref as derefIn, type Json } from './openapi-document.ts';

/** The contract an operation belongs to: the identity routes' (auth.*) or the procedures'. */
function contractOf(procedure: ProcedureDefinition): Json {
  return procedure.name.startsWith('auth.') ? authDocument : document;
}

export function exampleInput(procedure: ProcedureDefinition): Record<string, unknown> {
  const doc = contractOf(procedure);
  const deref = (value: Json) => derefIn(doc, value);
  const operation = doc.paths[procedure.path][procedure.method.toLowerCase()];
  const input: Record<string, unknown> = {};
  for (const ref of operation.parameters ?? []) {
    const parameter = deref(ref);
    if (parameter.in !== 'path' && parameter.in !== 'query') continue;
    const value = parameter.example ?? deref(parameter.schema).examples?.[0];
    if (value !== undefined) input[parameter.name] = value;
    else if (parameter.required) throw new Error(`${procedure.name}: parameter ${parameter.name} has no example`);
  }
  const body = operation.requestBody && deref(deref(operation.requestBody).content['application/json'].schema);
  if (body) {
    const example = body.examples?.[0];
    if (example === undefined && operation.requestBody.required) throw new Error(`${procedure.name}: request body has no example`);
    Object.assign(input, example);
  }
  return input;
}

/** The REST path with the example's path parameters filled in, plus its query string. */
export function restRequest(procedure: ProcedureDefinition, input: Record<string, unknown>): { path: string; init: RequestInit } {
  const query = new URLSearchParams();
  const body: Record<string, unknown> = {};
  let path = `${procedure.name.startsWith('auth.') ? '/api/auth' : '/api/v1'}${procedure.path}`;
  for (const [key, value] of Object.entries(input)) {
    const field = procedure.fields.find((f) => f.name === key);
    if (field?.in === 'path') path = path.replace(`{${key}}`, encodeURIComponent(String(value)));
    else if (field?.in === 'query') query.set(key, String(value));
    else body[key] = value;
  }
  const search = query.size > 0 ? `?${query}` : '';
  const init: RequestInit = { method: procedure.method };
  if (procedure.hasBody) {
    init.body = JSON.stringify(body);
    init.headers = { 'content-type': 'application/json' };
  }
  return { path: path + search, init };
}
