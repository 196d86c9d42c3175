/**
 * What a job kind gets to run with (kinds.ts): the services it uses, and of the delivery that runs
 * it, its abort signal and the job's lifecycle. Its own module so the kinds and what they call
 * (index-document.ts, workspace-index.ts) share it without importing each other.
 */
import type { Sql } from '../db/connection.ts';
import type { StorageDriver } from '../storage/driver.ts';
import type { AiClient } from '../ai-service/client.ts';
import type { PlanLookup } from '../credits/plans.ts';
import type { RequestGate } from '../db/request-gate.ts';
import type { Chunker } from './chunker.ts';
import type { JobLifecycle } from './lifecycle.ts';

export interface KindDeps {
  sql: Sql;
  storage: StorageDriver;
  ai: AiClient;
  plans: PlanLookup;
  /** MAX_EXTRACTED_CHARACTERS: the companion refuses longer texts already; checked again before storing. */
  maxCharacters: number;
  /** Chunks texts in a thread (chunker.ts): on the embedded database this worker shares the API's event loop. */
  chunker: Chunker;
  /** The API's requests in flight: a job's statements wait for them on the embedded database's one connection (worker.ts asBackground). */
  requests: RequestGate;
  now(): Date;
  /** How long a workspace.index slice takes new documents (workspace-index.ts SLICE_MS when absent; tests shorten it). */
  sliceMs?: number;
}

/** What a kind gets of the delivery that runs it. */
export interface KindRun {
  /** Aborts when the run is abandoned (the worker stops, the lease was lost). */
  signal: AbortSignal;
  /** The job's changes of state: workspace.index records each document through it. */
  jobs: JobLifecycle;
}
