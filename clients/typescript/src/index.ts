/**
 * @workspace-api/client: the typed RPC client of the workspace API. `createClient` (generated from
 * the contract, client.ts) offers every procedure with typed inputs and outputs; the runtime
 * (runtime.ts) does the calls, the errors, the retries and the job stream.
 */
export { createClient, contractVersion, idempotentProcedures, type Client, type ProcedureEvent, type ProcedureInput, type ProcedureName, type ProcedureOutput } from './client.ts';
export { ApiClientError, NETWORK_ERROR, type CallOptions, type ClientOptions, type StreamEvent, type StreamEventOf, type StreamOptions } from './runtime.ts';
/** The contract's schemas and operations as TypeScript types (`components['schemas']['Document']`). */
export type { components, operations } from './types.ts';
