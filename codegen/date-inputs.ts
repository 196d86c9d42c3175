/** The input paths of a procedure that its contract declares `format: date-time` (RPC meta may revive only those). */
import { deref, IN_PLACE_LIST, isSchemaObject, type Json } from './deref.ts';

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
