/**
 * How a run's error ends what it ran (a job in worker.ts, one document of workspace.index in
 * workspace-index.ts): retried when a later try may work (the AI service unreachable, a timeout,
 * a storage fault), else failed at once; and the message its owner sees, with provider and driver
 * details left to the log.
 */
import { AiServiceError } from '../ai-service/client.ts';
import { StorageUnavailableError } from '../storage/driver.ts';
import { STORAGE_UNAVAILABLE } from '../storage/unavailable.ts';
import { JobFailure } from './job-failure.ts';

const GENERIC_FAILURE = 'The job failed.';

export function isRetryable(error: unknown): boolean {
  return !(error instanceof JobFailure) && !(error instanceof AiServiceError && !error.retryable);
}

export function readableMessage(error: unknown): string {
  if (error instanceof JobFailure || error instanceof AiServiceError) return error.message;
  if (error instanceof StorageUnavailableError) return STORAGE_UNAVAILABLE;
  return GENERIC_FAILURE;
}
