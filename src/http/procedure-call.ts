/**
 * The binding layer: the one path every call takes, whatever carried it (REST, RPC, an event
 * stream on either, or an identity route). Authenticate (401 first), validate the input (400),
 * enforce the declared access (404 for a missing row, 403), find the handler (501 while the
 * procedure is not built), run it with the row and tenant in its context, and check the answer
 * against the contract when response validation is on. A procedure that declares the
 * Idempotency-Key header (the route row's `idempotent`) runs once per key and caller: a retry gets
 * the first answer again (src/idempotency/, docs/idempotency.md).
 */
import type { ProcedureDefinition } from '../contract/procedure-definition.ts';
import type { Context, Services } from '../context.ts';
import type { Principal } from '../auth/principal.ts';
import { enforceAccess } from '../auth/access.ts';
import { ApiError, type ValidationIssue } from '../contract/errors.ts';
import { outputValidator, toIssues, validateInput, type ValidateFunction } from '../contract/validators.ts';
import type { Logger } from '../logger.ts';
import { callerOf, keyIssue } from '../idempotency/idempotency-key.ts';
import { runOnce } from '../idempotency/idempotent-call.ts';
import { noteOrganization } from './request-span.ts';

export interface CallRequest {
  requestId: string;
  log: Logger;
  ip: string;
  /** The caller, resolved once per request by the session middleware. */
  principal: Principal | null;
  /** The `Idempotency-Key` request header as sent; read only for procedures that declare it. */
  idempotencyKey?: string | undefined;
  /** Marks the response as a replay of a kept answer (`Idempotent-Replayed: true`). */
  markReplayed?: () => void;
}

export interface Call<Answer, Extra extends object = {}> {
  procedure: ProcedureDefinition;
  input: Record<string, unknown>;
  /**
   * What the transport refused while reading the input (a REST field in the wrong place, an RPC
   * meta entry the contract does not allow): answered with the validation issues, 400 after 401.
   */
  refused?: ValidationIssue[];
  request: CallRequest;
  services: Services;
  /** The handler; undefined while the procedure is not built (501, after the access checks). */
  // Typed loosely on purpose: each transport's table types its own handlers (their inputs and rows
  // differ per procedure, and no one parameter type accepts them all).
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as said above
  run: ((input: any, ctx: any) => Promise<Answer> | Answer) | undefined;
  /** Context a transport adds for its kind of handler (identity routes: user agent, cookies). */
  extra?: Extra;
  /** Turns the validated JSON input into the handler's input (RPC revives declared Dates). */
  revive?: (input: Record<string, unknown>) => Record<string, unknown>;
  /**
   * The part of the answer the contract describes, or NO_BODY when there is none to check
   * (a redirect, or a stream whose events are checked as they are sent). Default: the answer.
   */
  body?: (answer: Answer) => unknown;
}

export const NO_BODY: unique symbol = Symbol('no body');

export async function invoke<Answer, Extra extends object = {}>(call: Call<Answer, Extra>): Promise<Answer> {
  const { procedure, input, request, services } = call;
  if (procedure.access !== 'public' && !request.principal) throw new ApiError('UNAUTHORIZED');
  // A malformed Idempotency-Key is one more input issue (400), before any work.
  const key = procedure.idempotent ? request.idempotencyKey : undefined;
  const issue = keyIssue(key);
  validateInput(procedure.name, input, issue ? [...(call.refused ?? []), issue] : call.refused);
  const { tenant, row } = await enforceAccess(procedure.access, input, request.principal, services);
  noteOrganization(tenant?.organizationId);
  if (!call.run) throw new ApiError('NOT_IMPLEMENTED');
  const run = call.run;
  const ctx = { requestId: request.requestId, log: request.log, ip: request.ip, principal: request.principal, services, tenant, row, ...call.extra } as Context<unknown> & Extra;
  const work = async (): Promise<Answer> => {
    try {
      return await run(call.revive ? call.revive(input) : input, ctx);
    } catch (error) {
      // A handler may throw only the codes its operation declares (generated/: `errors`); outside
      // production another one is our bug, answered 500 so a test that reaches it fails.
      if (services.config.validateResponses && error instanceof ApiError && !procedure.errors.includes((error as ApiError).code)) {
        throw new Error(`${procedure.name} threw ${error.code}, which its contract does not declare (${procedure.errors.join(', ')})`, { cause: error });
      }
      throw error;
    }
  };
  // Checked after the idempotent work, not inside it: an answer outside the contract is our bug,
  // and must not hand the key back for a retry to do the work again.
  const answer =
    key === undefined
      ? await work()
      : // Keyed on the validated JSON input (defaults filled in, Dates not yet revived): the same on both transports.
        await runOnce(
          {
            sql: services.db.sql,
            now: () => services.now(),
            log: request.log,
            caller: callerOf(request.principal, request.ip),
            key,
            operation: procedure.name,
            input,
            successStatus: procedure.successStatus,
            declared: procedure.errors,
            replayed: () => request.markReplayed?.(),
          },
          work,
        );
  if (services.config.validateResponses) {
    const body = call.body ? call.body(answer) : answer;
    if (body !== NO_BODY) checkAnswer(procedure.name, outputValidator(procedure.name, procedure.successStatus), body);
  }
  return answer;
}

/**
 * An answer (or stream event) that breaks the contract is our bug: fail loudly (500) rather than
 * mislead clients. Checked in its wire form, where Dates are ISO strings.
 */
export function checkAnswer(what: string, validate: ValidateFunction | undefined, body: unknown): void {
  if (!validate) return;
  const wire: unknown = JSON.parse(JSON.stringify(body ?? null));
  if (!validate(wire)) throw new Error(`${what} answered outside its contract: ${JSON.stringify(toIssues(validate.errors ?? []))}`);
}
