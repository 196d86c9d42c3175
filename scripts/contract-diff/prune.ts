/**
 * The parts of two bundles worth handing to api-smart-diff. The tool resolves every $ref and walks
 * every operation of both documents (about a second per bundle pair on this machine, most of the
 * guard's time), yet a change usually touches a few paths. A path item that is equal on both sides,
 * together with every component it reaches through $refs (transitively), yields no diff: the tool
 * compares resolved values, so nothing it could report lies inside it. Such path items are left out
 * of both sides, and so are the components no remaining path reaches: changes under `components`
 * are dropped by compare.ts anyway (they reach clients through operations), except the security
 * schemes, which are always kept. Everything outside `paths` and `components` (info, servers,
 * security, tags, webhooks) is kept as it is.
 *
 * Pairing stays as it was: a path left out has the same key on both sides, and compare.ts pairs
 * exact keys first, so which paths pair by template is unchanged.
 */
import { isDeepStrictEqual } from 'node:util';

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A reference this file cannot follow (another file, or a pointer outside `components`): nothing is pruned then. */
class Unfollowable extends Error {}

/**
 * Every component `node` names, as `<section>/<name>`: in a `$ref`, and in any string that is a
 * pointer into `components` (a discriminator's `mapping` names schemas that way, not with `$ref`).
 */
function refsIn(node: unknown, found: Set<string>): void {
  if (typeof node === 'string') {
    // A pointer may go deeper than the component (…/Workspace/properties/name); the component holds it.
    const match = /^#\/components\/([^/]+)\/([^/]+)/.exec(node);
    if (match) found.add(`${decode(match[1]!)}/${decode(match[2]!)}`);
    return;
  }
  if (Array.isArray(node)) {
    for (const item of node) refsIn(item, found);
    return;
  }
  if (!isObject(node)) return;
  for (const [key, value] of Object.entries(node)) {
    if (key === '$ref' && typeof value === 'string' && !value.startsWith('#/components/')) throw new Unfollowable(value);
    refsIn(value, found);
  }
}

const decode = (segment: string): string => segment.replace(/~1/g, '/').replace(/~0/g, '~');

const component = (document: Json, key: string): unknown => {
  const slash = key.indexOf('/');
  const section = (document.components as Json | undefined)?.[key.slice(0, slash)];
  return isObject(section) ? section[key.slice(slash + 1)] : undefined;
};

/** The components `node` reaches in `document`, transitively. */
function reach(document: Json, node: unknown): Set<string> {
  const seen = new Set<string>();
  const queue = new Set<string>();
  refsIn(node, queue);
  for (const key of queue) {
    if (seen.has(key)) continue;
    seen.add(key);
    refsIn(component(document, key), queue);
  }
  return seen;
}

/** Whether a path item is the same on both sides, down to every component it reaches. */
function unchanged(before: Json, after: Json, path: string): boolean {
  const itemBefore = (before.paths as Json)[path];
  const itemAfter = (after.paths as Json)[path];
  if (!isDeepStrictEqual(itemBefore, itemAfter)) return false;
  const reached = new Set([...reach(before, itemBefore), ...reach(after, itemAfter)]);
  for (const key of reached) {
    if (!isDeepStrictEqual(component(before, key), component(after, key))) return false;
  }
  return true;
}

/** Only what the reached keys name of `components`, plus every security scheme. */
function keepComponents(document: Json, keep: Set<string>): Json | undefined {
  const components = document.components;
  if (!isObject(components)) return undefined;
  const kept: Json = {};
  for (const [section, entries] of Object.entries(components)) {
    if (!isObject(entries)) continue;
    const names = section === 'securitySchemes' ? Object.keys(entries) : Object.keys(entries).filter((name) => keep.has(`${section}/${name}`));
    if (names.length > 0) kept[section] = Object.fromEntries(names.map((name) => [name, entries[name]]));
  }
  return kept;
}

/**
 * Copies of `before` and `after` without the path items that cannot differ and the components
 * nothing left reaches. Documents without `paths` objects, or with a reference that does not point
 * into `components`, are returned as they are.
 */
export function pruneUnchanged(before: Json, after: Json): [Json, Json] {
  if (!isObject(before.paths) || !isObject(after.paths)) return [before, after];
  try {
    return prunePaths(before, after);
  } catch (error) {
    if (error instanceof Unfollowable) return [before, after];
    throw error;
  }
}

/** pruneUnchanged's work, once it has found both `paths` to be objects. */
function prunePaths(before: Json, after: Json): [Json, Json] {
  const [beforePaths, afterPaths] = [before.paths as Json, after.paths as Json];
  const kept = new Set(Object.keys(beforePaths).filter((path) => !(path in afterPaths) || !unchanged(before, after, path)));
  for (const path of Object.keys(afterPaths)) if (!(path in beforePaths)) kept.add(path);
  const prune = (document: Json): Json => {
    const paths = Object.fromEntries(Object.entries(document.paths as Json).filter(([path]) => kept.has(path)));
    // Whatever stays outside `paths` (webhooks, say) keeps the components it reaches too.
    const reached = reach(
      document,
      Object.entries({ ...document, paths }).filter(([key]) => key !== 'components'),
    );
    const components = keepComponents(document, reached);
    return { ...document, paths, ...(components === undefined ? {} : { components }) };
  };
  return [prune(before), prune(after)];
}
