// Generated from src/contract/procedure-definition.ts. Do not edit.
/**
 * The shape of a row of the generated route tables (generated/procedures.ts, generated/auth-routes.ts)
 * and the types that turn an openapi-typescript operation into a handler's input and output.
 * Codegen writes the rows; everything that routes, validates or authorizes reads them.
 */
export type Access =
  | 'public'
  | 'session'
  | 'platform-admin'
  /** An organization permission; the organization comes from an input field. */
  | { permission?: string; tenant: 'organizationId' | 'workspaceId'; optional?: boolean }
  /**
   * An organization permission on a row: the binding layer loads the row of `resource` named by
   * the input field `idField` (default `id`) through the resource's registered loader, answers 404
   * when it does not exist and 403 when the caller lacks the permission in its organization.
   */
  | { permission: string; tenant: 'row'; resource: string; idField?: string }
  /**
   * A platform admin acting on a row (admin.organizations.delete, admin.flags.delete): 403 for
   * anyone else, then the row of `resource` named by `idField` loaded as above (404 when missing).
   */
  | { role: 'platform-admin'; resource: string; idField?: string };

export interface InputField {
  name: string;
  in: 'path' | 'query' | 'header' | 'body';
  /** JSON type of a path or query parameter, so REST can coerce its string before validation. */
  type?: 'string' | 'integer' | 'number' | 'boolean';
}

export interface ProcedureDefinition {
  name: string;
  group: string;
  method: 'GET' | 'PUT' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  access: Access;
  /** The error codes the operation declares (the `code` constants of its non-2xx answers). */
  errors: readonly string[];
  fields: readonly InputField[];
  hasBody: boolean;
  successStatus: number;
  produces: 'json' | 'event-stream';
  /**
   * The input paths whose contract schema is `format: date-time`: the only places where an RPC
   * `meta` entry `["date", path]` may turn a string into a Date. One path per field, each element
   * a property name, or `'*'` for any array index or any key of a map (additionalProperties).
   * Empty when the input declares no date-time field.
   */
  dateInputs: readonly (readonly string[])[];
  /**
   * Event-stream procedures only: each event name the stream may send, and the component schema
   * (in the contract's `components/schemas`) of the whole message `{ event, id?, data }`, from the
   * `oneOf` of its `text/event-stream` answer. The server checks every event it sends against it.
   */
  events?: Readonly<Record<string, string>>;
  /**
   * The operation declares the `Idempotency-Key` request header (codegen derives this from the
   * contract): the binding layer keeps its first answer per key and caller and replays it to a
   * retry (src/idempotency/, docs/idempotency.md). Absent on every other operation.
   */
  idempotent?: true;
}

type Simplify<T> = { [K in keyof T]: T[K] } & {};
type Present<T> = [NonNullable<T>] extends [never] ? {} : NonNullable<T>;
type ParamsOf<Op, Where extends string> = Op extends { parameters: infer P } ? (P extends { [K in Where]?: infer V } ? Present<V> : {}) : {};
type BodyOf<Op> = Op extends { requestBody?: infer R } ? (Present<R> extends { content: { 'application/json': infer B } } ? B : {}) : {};
type BodyOf2xx<Response> = Response extends { content: infer C } ? (C extends { 'application/json': infer B } ? B : C extends { 'text/event-stream': infer S } ? S : never) : never;

/** An operation's input: its path, query and body fields as one object (both transports). */
export type OperationInput<Op> = Simplify<ParamsOf<Op, 'path'> & ParamsOf<Op, 'query'> & BodyOf<Op>>;
/** An operation's successful answer; date-time fields are Date objects. */
export type OperationOutput<Op> = Op extends { responses: infer R } ? BodyOf2xx<R[Extract<keyof R, 200 | 201 | 202 | 204>]> : never;
