/**
 * The binding layer: the one path every procedure call takes, whichever transport carried it.
 * Authenticate (401 first), validate the input (400), enforce the declared access (403), run
 * the handler, and check the answer against the contract when response validation is on.
 */
import type { ProcedureDefinition } from '../../generated/procedures.ts';
import type { Context, Handler, Principal, Services } from '../context.ts';
import { enforceAccess } from '../auth/access.ts';
import type { Logger } from '../logger.ts';
import { ApiError } from '../contract/errors.ts';
import { outputValidator, toIssues, validateInput } from '../contract/validators.ts';

export interface CallRequest {
  requestId: string;
  log: Logger;
  ip: string;
  /** The caller, resolved once per request by the session middleware. */
  principal: Principal | null;
}

export async function callProcedure(
  procedure: ProcedureDefinition,
  handler: Handler<any> | undefined,
  input: Record<string, unknown>,
  request: CallRequest,
  services: Services,
  /** Turns the validated JSON input into the handler's input (RPC revives Dates here). */
  revive: (input: Record<string, unknown>) => Record<string, unknown> = (input) => input,
): Promise<unknown> {
  await admitCall(procedure, input, request.principal, services);
  if (!handler) throw new ApiError('NOT_IMPLEMENTED');
  const ctx: Context = { requestId: request.requestId, log: request.log, ip: request.ip, principal: request.principal, services };
  const output = await handler(revive(input), ctx);
  if (services.config.validateResponses) checkOutput(procedure, output);
  return output;
}

/** The checks every call passes before its handler, in this order: 401, then 400, then 403. */
export async function admitCall(procedure: ProcedureDefinition, input: Record<string, unknown>, principal: Principal | null, services: Services): Promise<void> {
  if (procedure.access !== 'public' && !principal) throw new ApiError('UNAUTHORIZED');
  validateInput(procedure.name, input);
  await enforceAccess(procedure.access, input, principal, services.memberships);
}

/** A handler answer that breaks the contract is our bug: fail loudly (500) rather than mislead clients. */
function checkOutput(procedure: ProcedureDefinition, output: unknown): void {
  const validate = outputValidator(procedure.name, procedure.successStatus);
  if (!validate) return;
  const wire = JSON.parse(JSON.stringify(output ?? null));
  if (!validate(wire)) {
    throw new Error(`${procedure.name} answered outside its contract: ${JSON.stringify(toIssues(validate.errors ?? []))}`);
  }
}
