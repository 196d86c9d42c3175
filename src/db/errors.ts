/** PostgreSQL errors the service answers on purpose rather than as a 500. */

/** True for a unique violation (SQLSTATE 23505), on the named constraint when one is given. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const e = error as { code?: string; constraint_name?: string } | null;
  return e?.code === '23505' && (constraint === undefined || e.constraint_name === constraint);
}

/** SQLSTATEs after which a whole transaction may simply run again: a deadlock's victim, a serialization failure. */
const RETRYABLE = new Set(['40P01', '40001']);

export function isRetryableConflict(error: unknown): boolean {
  return RETRYABLE.has((error as { code?: unknown } | null)?.code as string);
}
