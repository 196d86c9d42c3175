/**
 * The merged input schema of a procedure: the body schema with every one of its keywords (allOf,
 * if/then/else, oneOf with its discriminator, dependentRequired, unevaluatedProperties, ...), plus
 * the path and query parameters as extra properties beside the body's. Conditions on body fields
 * keep working because the merged object holds those fields at the top level, as the body did.
 */
import { deref, IN_PLACE_LIST, IN_PLACE_SCHEMA, isSchemaObject, type Json } from './deref.ts';

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
