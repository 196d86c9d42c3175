/**
 * Errors that mean the database could not be reached or did not answer in time, rather than an
 * answer to the query: a request that meets one is answered 503 SERVICE_UNAVAILABLE
 * (src/http/error-handler.ts), not 500, because trying again later can succeed.
 */
import { DatabaseDeadlineError } from './deadline.ts';
import { TransactionLostError } from './transaction-guard.ts';

/** postgres.js's codes for a connection that failed, went away or was ended. */
const DRIVER_CODES = new Set(['CONNECTION_CLOSED', 'CONNECTION_DESTROYED', 'CONNECTION_ENDED', 'CONNECT_TIMEOUT']);

/**
 * Node's codes for a socket that could not connect or was cut (server down, network, DNS); only on
 * an error postgres.js handed to a query (it names the query on it), not another client's.
 */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * SQLSTATEs of a server that gave up waiting (statement_timeout or a cancel request: 57014;
 * lock_timeout: 55P03), is shutting down or starting (57P01-57P03), or is full (53300). Class 08
 * (connection exception) is matched as a class.
 */
const SQLSTATES = new Set(['57014', '55P03', '57P01', '57P02', '57P03', '53300']);

export function isDatabaseUnavailable(error: unknown): boolean {
  if (error instanceof DatabaseDeadlineError || error instanceof TransactionLostError) return true;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  if (NETWORK_CODES.has(code)) return 'query' in (error as object);
  return DRIVER_CODES.has(code) || SQLSTATES.has(code) || /^08[0-9A-Z]{3}$/.test(code);
}
