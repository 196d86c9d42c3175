/**
 * A failure a retry cannot fix, with a message fit for the job's `error` (the worker fails the job
 * at once instead of retrying it). Its own module so the kinds and what they call (chunker.ts)
 * share it without importing each other.
 */
export class JobFailure extends Error {
  override name = 'JobFailure';
}
