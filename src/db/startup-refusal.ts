/**
 * A connection pooler that refuses a startup parameter. PgBouncer accepts only the parameters it
 * tracks itself (client_encoding, DateStyle, TimeZone, standard_conforming_strings,
 * application_name) plus those listed in its ignore_startup_parameters, and closes any other
 * connection with "unsupported startup parameter: NAME". On a server (DATABASE_POOL_MODE=session)
 * the service sends its timeouts that way, so pointing DATABASE_URL at a transaction-mode pooler
 * without saying so fails on the first query; the operator then needs the setting's name, not the
 * protocol error.
 */
const REFUSED = /unsupported startup parameter:?\s*"?([\w.]+)/i;

/** The error to show instead of `error` when a pooler refused a startup parameter; undefined otherwise. */
export function explainStartupRefusal(error: unknown): Error | undefined {
  const message = error instanceof Error ? error.message : typeof error === 'string' ? error : '';
  const refused = REFUSED.exec(message);
  if (!refused) return undefined;
  return new Error(
    `The database at DATABASE_URL refused the startup parameter ${refused[1]}: it is a connection pooler (PgBouncer or a managed pooler), ` +
      'which takes no server settings at connect. If it pools in transaction mode, set DATABASE_POOL_MODE=transaction (the timeouts are then set ' +
      "per transaction) and DATABASE_DIRECT_URL to the PostgreSQL server itself. Do not list the parameter in the pooler's " +
      'ignore_startup_parameters instead: the timeout would then be dropped silently. See docs/deploying.md.',
    { cause: error },
  );
}
