/** Walking the bundled contract: local `$ref`s, schema objects, and the keywords that apply in place. */
export type Json = Record<string, any>;

export function deref(doc: Json, value: Json): Json {
  let current = value;
  while (current && typeof current.$ref === 'string') {
    const ref: string = current.$ref;
    if (!ref.startsWith('#/')) throw new Error(`unexpected external $ref ${ref}`);
    current = ref
      .slice(2)
      .split('/')
      .reduce((node: Json, key) => node?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
    if (current === undefined) throw new Error(`unresolved $ref ${ref}`);
  }
  return current;
}

export function isSchemaObject(value: unknown): value is Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Keywords whose subschemas validate the same object as the schema they sit in (in-place
 * applicators): the merged input's parameters are visible to them too.
 */
export const IN_PLACE_SCHEMA = ['not', 'if', 'then', 'else'] as const;
export const IN_PLACE_LIST = ['allOf', 'anyOf', 'oneOf'] as const;
