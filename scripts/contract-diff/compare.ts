/**
 * One published contract against its released snapshot, through api-smart-diff (an established
 * OpenAPI 3.x differ that runs offline): it resolves every $ref, compares each operation's inputs
 * and outputs with JSON Schema 2020-12 rules for 3.1 documents, and classifies each change as
 * breaking, non-breaking, deprecated, annotation or unclassified, knowing the direction (a value
 * removed from what a client sends breaks it; the same removal from what it receives does not).
 *
 * Three adjustments to the tool, all through its own options (rules, annotateHook); the
 * classifications stay the tool's:
 * - path matching: the tool pairs paths by their template with parameter names blanked, so our
 *   GET /workspaces/{slug} and PATCH, DELETE /workspaces/{id} (openapi/redocly.yaml says why both
 *   exist) were paired with each other, and two identical documents differed. Paths now pair by
 *   exact key first and by template only among the rest (a renamed path parameter stays a rename);
 * - `type` and `enum` as sets: the tool compares `type: string` and `type: [string, "null"]` as one
 *   value replaced by another, and pairs an enum value that went with one that came as a
 *   "replacement". Its rule for a replacement is "breaking" in requests and, turned around for
 *   responses, "non-breaking" there: a response field that became nullable, changed from string to
 *   integer, or answers a renamed enum value passed as non-breaking. Each schema's `type` (a string
 *   is a set of one) and `enum` are compared as sets instead, with the tool's mapping for `required`,
 *   so its own rules for an added or removed value apply: a value added to what clients receive, or
 *   removed from what they may send, is breaking; the reverse is not;
 * - wording: the tool calls any parameter that declares `required: false` "required" (it tests
 *   that the key exists, not its value), and an added response header "annotation" or nothing.
 *
 * And one rule of ours: open enums (`x-extensible-enum: true`, docs/contract-changes.md). Partners
 * are told to accept a value of an open enum they do not know, so a value added to one that was
 * already open in the released snapshot is non-breaking, also in what clients receive. Removing a
 * value keeps the tool's verdict, and so does adding one to a closed enum, or to an enum opened in
 * the same change (the snapshot never promised clients that it would grow).
 *
 * The tool is handed only the path items a change can reach (prune.ts): the rest cannot differ and
 * cost most of the time. test/contract/contract-diff.test.ts proves both ways report the same.
 */
import {
  apiCompare,
  getMaxOpenApiVersion,
  openApi3AnnotateHook,
  openapi3Rules,
  requiredMappingResolver,
  resolveRef,
  transformComapreRules,
  nonBreaking,
  type AnnotateHook,
  type CompareRule,
  type CompareRules,
  type CompareTransformResolver,
  type ComapreContext,
  type DiffTypeClassifier,
  type RuleDiffType,
  type Diff,
  type DiffType,
  type MappingObjectResolver,
} from 'api-smart-diff';
import { pruneUnchanged } from './prune.ts';

export type ChangeKind = DiffType;

export interface ContractChange {
  kind: ChangeKind;
  action: Diff['action'];
  /** `GET /workspaces/{slug}`, or `document` for changes outside the operations (info, servers, security). */
  operation: string;
  /** The operation's operationId, when the change is inside one. */
  operationId?: string;
  /** Where in the operation (or the document) it changed, as a JSON pointer. */
  location: string;
  description: string;
}

export interface ContractDiff {
  /** The bundle's file name, e.g. `openapi.json`. */
  name: string;
  releasedVersion: string;
  currentVersion: string;
  changes: ContractChange[];
}

type OpenApiDocument = { info?: { version?: unknown }; paths?: Record<string, Record<string, unknown>> };

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

const template = (path: string): string => path.replace(/\{[^}]*\}/g, '{}');

/** Exact keys first; a path whose template matches an unpaired one is the same path with a renamed parameter. */
const pathMapping: MappingObjectResolver = (before, after) => {
  const unpaired = Object.keys(after).filter((key) => !(key in before));
  const mapped: Record<string, string> = {};
  const removed: string[] = [];
  for (const key of Object.keys(before)) {
    if (key in after) {
      mapped[key] = key;
      continue;
    }
    const twin = unpaired.findIndex((candidate) => template(candidate) === template(key));
    if (twin < 0) removed.push(key);
    else mapped[key] = unpaired.splice(twin, 1)[0]!;
  }
  return { added: unpaired, removed, mapped };
};

/**
 * What the tool's own paths transform does, with the mapping above: an added or removed path gets
 * an empty path item on the other side, so its operations are reported one by one (a removed
 * operation is breaking) instead of as one unclassified path item.
 */
const pathsTransform: CompareTransformResolver = (before, after) => {
  if (!isObject(before) || !isObject(after)) return [before, after];
  const { added, removed } = pathMapping(before, after, undefined as never);
  return [
    { ...before, ...Object.fromEntries(added.map((key) => [key, {}])) },
    { ...after, ...Object.fromEntries(removed.map((key) => [key, {}])) },
  ];
};

/**
 * The hook reads the parameter from the document, not from the tool's context: for a `$ref`
 * compared once and reported in each operation that uses it, the context is the first operation's.
 */
function annotateWith(before: OpenApiDocument, after: OpenApiDocument): AnnotateHook {
  return (diff, ctx) => {
    const { path } = diff;
    const verb = VERBS[diff.action];
    if (path[0] === 'paths' && path[3] === 'parameters' && (path.length === 5 || path.length === 6)) {
      const document = diff.action === 'remove' ? before : after;
      const operation = document.paths?.[path[1] as string]?.[path[2] as string] as { parameters?: unknown[] } | undefined;
      const parameter = resolveRef(operation?.parameters?.[path[4] as number], document) as { in?: string; name?: string; required?: boolean } | undefined;
      const key = path[5];
      if (parameter?.name && path.length === 5 && diff.action !== 'replace') {
        return `[${verb}] ${parameter.required === true ? 'required' : 'optional'} ${parameter.in} parameter \`${parameter.name}\``;
      }
      if (parameter?.name && (key === 'required' || key === 'deprecated')) {
        return `[${verb}] ${key} status of ${parameter.in} parameter \`${parameter.name}\``;
      }
    }
    if (path[0] === 'paths' && path[3] === 'responses' && path[5] === 'headers' && path.length === 7 && diff.action !== 'replace') {
      return `[${verb}] header \`${path[6]}\` of Response ${path[4]}`;
    }
    return openApi3AnnotateHook(diff, ctx);
  };
}

const typesAsSets: CompareTransformResolver = (before, after) => {
  const asList = (schema: unknown): unknown => (isObject(schema) && typeof schema.type === 'string' ? { ...schema, type: [schema.type] } : schema);
  return [asList(before), asList(after)];
};

/** The marker of an open enum, beside `enum` in the same schema. */
export const OPEN_ENUM = 'x-extensible-enum';

/**
 * The `enum` arrays of schemas open on both sides, as the tool compares them: the transform below
 * sees each schema pair before the tool walks into it, and the classifier of an added enum value
 * gets that array as its parent. A WeakSet, as each comparison works on fresh copies.
 */
const openEnums = new WeakSet<object>();

const markOpenEnums: CompareTransformResolver = (before, after) => {
  if (isObject(before) && isObject(after) && before[OPEN_ENUM] === true && after[OPEN_ENUM] === true && Array.isArray(after.enum)) {
    openEnums.add(after.enum);
  }
  return [before, after];
};

/** An added value of an open enum is non-breaking in either direction; anything else keeps the tool's class. */
function openEnumAdd(rule: CompareRule | undefined): CompareRule {
  const [add, remove, replace] = (rule?.$ ?? []) as [RuleDiffType?, RuleDiffType?, RuleDiffType?];
  const added: DiffTypeClassifier = (ctx) => {
    const values = ctx.after.parent;
    return typeof values === 'object' && values !== null && openEnums.has(values) ? nonBreaking : classify(add, ctx);
  };
  return { ...rule, $: [added, remove ?? 'unclassified', replace ?? 'unclassified'] };
}

const classify = (rule: RuleDiffType | undefined, ctx: ComapreContext): DiffType => (rule === undefined ? 'unclassified' : typeof rule === 'function' ? rule(ctx) : rule);

type SchemaRule = CompareRule & { '/type'?: CompareRule; '/enum'?: CompareRule & { '/*'?: CompareRule } };

function rules(version: '3.0.x' | '3.1.x'): CompareRules {
  const base = openapi3Rules({ version }) as Record<string, CompareRule>;
  const withPaths = { ...base, '/paths': { ...base['/paths'], transform: [pathsTransform], mapping: pathMapping } } as CompareRules;
  // Every schema rule (request or response side) is the one that has a `/type` child.
  return transformComapreRules(withPaths, (rule: SchemaRule) =>
    rule['/type']
      ? {
          ...rule,
          transform: [...(rule.transform ?? []), typesAsSets, markOpenEnums],
          '/type': { ...rule['/type'], mapping: requiredMappingResolver },
          '/enum': { ...rule['/enum'], mapping: requiredMappingResolver, '/*': openEnumAdd(rule['/enum']?.['/*']) },
        }
      : rule,
  );
}

const pointer = (segments: Array<string | number>): string => `/${segments.map((segment) => String(segment).replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;

/**
 * Which changes a client can see. Everything under `components` reaches a client only through an
 * operation, where the tool reports it again with the direction it has there; in `components`
 * it is classified without that direction (a required field added to a response schema counts as
 * breaking there). The security schemes are the exception: operations name them, not embed them.
 */
function seenByClients(diff: Diff): boolean {
  return diff.path[0] !== 'components' || diff.path[1] === 'securitySchemes';
}

function describe(diff: Diff, document: OpenApiDocument): Pick<ContractChange, 'operation' | 'operationId' | 'location'> {
  const [root, path, method, ...rest] = diff.path;
  if (root === 'paths' && typeof path === 'string' && typeof method === 'string' && METHODS.has(method)) {
    const operation = document.paths?.[path]?.[method] as { operationId?: unknown } | undefined;
    return {
      operation: `${method.toUpperCase()} ${path}`,
      ...(typeof operation?.operationId === 'string' ? { operationId: operation.operationId } : {}),
      location: rest.length > 0 ? pointer(rest) : '',
    };
  }
  return { operation: 'document', location: pointer(diff.path) };
}

/** The client-visible changes from `released` to `current`, in a stable order. */
export function compareContract(name: string, released: unknown, current: unknown, options: { prune?: boolean } = {}): ContractDiff {
  // Copies: the tool writes each transformed node back into the documents it compares, so a
  // document compared twice would start the second comparison already transformed.
  const copies: [OpenApiDocument, OpenApiDocument] = [structuredClone(released) as OpenApiDocument, structuredClone(current) as OpenApiDocument];
  // Unchanged path items yield nothing and cost most of the time (prune.ts says why that is sound);
  // `prune: false` compares the whole documents, for the test that proves both agree.
  const [before, after] = options.prune === false || !isObject(copies[0]) || !isObject(copies[1]) ? copies : (pruneUnchanged(copies[0], copies[1]) as [OpenApiDocument, OpenApiDocument]);
  const version = getMaxOpenApiVersion(before, after) ?? '3.1.x';
  const { diffs } = apiCompare(before, after, { rules: rules(version), annotateHook: annotateWith(before, after) });
  const changes = diffs.filter(seenByClients).map((diff): ContractChange => {
    // Removed operations and fields are named as they were; everything else as it is now.
    const where = describe(diff, diff.action === 'remove' ? before : after);
    const said = diff.description || `[${VERBS[diff.action]}] ${where.location || where.operation}`;
    return { kind: diff.type, action: diff.action, ...where, description: `${said}${values(diff)}` };
  });
  changes.sort((a, b) => compareText(a.operation, b.operation) || compareText(a.location, b.location) || compareText(a.description, b.description));
  return {
    name,
    releasedVersion: versionOf(before),
    currentVersion: versionOf(after),
    changes,
  };
}

const VERBS: Record<Diff['action'], string> = { add: 'Added', remove: 'Removed', replace: 'Replaced', rename: 'Renamed' };

/**
 * The value that came or went, when it is short enough to read in a line: the tool's wording says
 * "annotation (5)" for the sixth enum value, so the value itself is what tells the reader which.
 */
function values(diff: Diff): string {
  const show = (value: unknown): string | undefined => {
    if (value !== null && typeof value === 'object') return undefined;
    const text = JSON.stringify(value);
    return text !== undefined && text.length <= 80 ? `\`${text}\`` : undefined;
  };
  const before = show(diff.before);
  const after = show(diff.after);
  if (diff.action === 'add') return after ? `: ${after}` : '';
  if (diff.action === 'remove') return before ? `: ${before}` : '';
  return before && after ? `: ${before} → ${after}` : '';
}

const compareText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** info.version as written; YAML reads an unquoted `1.0` as a number. */
function versionOf(document: OpenApiDocument): string {
  const version = document.info?.version;
  return typeof version === 'string' || typeof version === 'number' ? String(version) : '';
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
