/**
 * Settings, read from environment variables once at start. A bad value stops the start with a
 * message naming the variable; every setting has a default that makes the embedded mode work.
 * The README's settings table is checked against `settingNames` by a test.
 */
import { isIP } from 'node:net';
import { resolve } from 'node:path';

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string | undefined;
  /** Timeouts set on every database connection, and the transaction guard (see DatabaseSettings). */
  database: DatabaseSettings;
  publicUrl: string;
  webUrl: string | undefined;
  trustedOrigins: string[];
  /**
   * TRUST_PROXY, in the terms of Express's `trust proxy` setting: which peers may name the client
   * through X-Forwarded-For. `false` (the default): none; the socket address is the client.
   * A hop count N (`true` means 1): N proxies sit in front, each appending the address it saw, so
   * the client is the Nth entry from the right and anything a client wrote further left is
   * ignored (Express's own `true`, "trust every hop", would let a client choose its address, so it
   * is not offered). A comma-separated list of addresses, CIDR subnets and the names `loopback`,
   * `linklocal`, `uniquelocal`: those peers are proxies, and the client is the rightmost entry
   * that is not one of them.
   */
  trustProxy: false | number | string[];
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  environment: string;
  rateLimitPerMinute: number;
  validateResponses: boolean;
  requireEmailVerification: boolean;
  contactEmail: string | undefined;
  authRateLimitPerMinute: number;
  /** Where mail goes: an SMTP server, the log (development), or nowhere (features that mail answer 412). */
  emailProvider: 'smtp' | 'log' | 'none';
  smtpUrl: string | undefined;
  emailFrom: string;
  /** Users signing up (or already there at start) with these emails become platform admins. */
  adminEmails: string[];
  github: OAuthClient | null;
  google: OAuthClient | null;
  /** HMAC key for signed upload/download URLs and cursors; when unset, `<DATA_DIR>/secret` is made once and kept (see secret.ts). */
  secret: string | undefined;
  maxUploadBytes: number;
  storage: { driver: 'local' } | S3Settings;
  /** The companion AI service: where the API and worker reach it, and how it embeds (src/ai-service/). */
  ai: AiSettings;
  /** SEARCH_RANKING: how documents.search ranks; `hybrid` (default), or `vector` or `fulltext` alone (src/documents/chunk-search.ts). */
  searchRanking: 'hybrid' | 'vector' | 'fulltext';
  /** The job worker (src/jobs/): whether it runs inside `serve` and `api`, and how many jobs at once. */
  worker: WorkerSettings;
  /** Stripe billing, or null when not configured: then there is no plan and no limit is enforced. */
  billing: BillingSettings | null;
  /**
   * METRICS_TOKEN: when set, GET /metrics needs `Authorization: Bearer <token>`. Required when
   * NODE_ENV=production (the service refuses to start without it); elsewhere unset leaves it open.
   */
  metricsToken: string | undefined;
}

export type PaidPlan = 'pro' | 'team';
export type BillingInterval = 'month' | 'year';

export interface BillingSettings {
  /** STRIPE_SECRET_KEY. */
  secretKey: string;
  /** STRIPE_WEBHOOK_SECRET: verifies the signature of /api/auth/stripe/webhook deliveries. */
  webhookSecret: string;
  /** STRIPE_API_URL: Stripe's API base, https://api.stripe.com unless set (tests point it at a local stand-in). */
  apiUrl: string | undefined;
  /** STRIPE_PRICE_<PLAN>_<INTERVAL>: the price id of each paid plan and interval; a plan with none cannot be bought. */
  prices: Record<PaidPlan, Partial<Record<BillingInterval, string>>>;
}

export interface AiSettings {
  /** AI_URL: the OpenAI-compatible base the API and worker call (`/v1/embeddings`, `/v1/extract`, `/health`). */
  url: string;
  /**
   * AI_API_KEY: sent as a bearer token to AI_URL when set; the companion then answers only requests
   * that carry it (all but `/health`). `serve` makes one for the child it starts when none is set.
   */
  apiKey: string | undefined;
  /** AI_HOST: where `serve` and `ai` start the companion service; loopback whatever HOST says. */
  host: string;
  /** AI_PORT: where `serve` and `ai` start the companion service (on AI_HOST). */
  port: number;
  /** EMBEDDING_PROVIDER: `local` (the offline sentence-embedding model, free searches) or `openai` (forwarded). */
  provider: 'local' | 'openai';
  /** The OpenAI-compatible provider the companion forwards to when EMBEDDING_PROVIDER is openai. */
  openai: { baseUrl: string; apiKey: string | undefined; model: string };
  /** What one extraction may use and produce (src/ai-service/, docs/ai-service.md "Limits"). */
  extraction: ExtractionLimits;
}

/** Limits on one `/v1/extract` request; a document that breaks one fails its request (422), never the service. */
export interface ExtractionLimits {
  /** EXTRACT_TIMEOUT_SECONDS: wall time of one extraction; the work is killed, not waited for. */
  timeoutMs: number;
  /** EXTRACT_MEMORY_MB: heap and buffers, together, of the thread that parses one document. */
  memoryMb: number;
  /** MAX_EXTRACTED_CHARACTERS: a document whose text is longer is refused (not truncated). */
  maxCharacters: number;
  /** EXTRACT_MAX_INFLATED_BYTES: the decompressed bytes of a PDF's streams or a DOCX's zip entries, together. */
  maxInflatedBytes: number;
  /** EXTRACT_MAX_PDF_PAGES. */
  maxPdfPages: number;
  /** EXTRACT_MAX_HTML_DEPTH: the deepest element nesting an HTML document may have. */
  maxHtmlDepth: number;
  /** OCR_MAX_PIXELS: width × height of an image read by OCR, checked before decoding. */
  maxImagePixels: number;
  /** OCR_TIMEOUT_SECONDS: one image's recognition; the OCR worker is stopped when it runs over. */
  ocrTimeoutMs: number;
}

export interface WorkerSettings {
  /**
   * WORKER: `process` runs the worker as a child process of `serve` and `api` (its own event loop
   * and core, started and stopped with them; needs DATABASE_URL, the default with it); `inline`
   * runs it inside the API's process (the default on the embedded database, whose one connection
   * the API holds); `off` leaves jobs to `main.ts worker` processes.
   */
  mode: 'process' | 'inline' | 'off';
  /** WORKER_CONCURRENCY: pg-boss workers in one worker process, each running one fetched batch at a time. */
  concurrency: number;
  /**
   * WORKER_BATCH_SIZE: jobs one pg-boss worker fetches at once and runs together (one fetch and one
   * complete statement for the batch; each job still succeeds, fails and retries alone); 4 on the
   * embedded database, 1 on a server by default.
   */
  batchSize: number;
  /** JOB_LEASE_SECONDS: a running job whose worker stops sending heartbeats for this long is picked up again. */
  leaseSeconds: number;
}

export interface S3Settings {
  driver: 's3';
  bucket: string;
  region: string;
  /** An S3-compatible endpoint (MinIO, R2, a test server); AWS when unset. */
  endpoint: string | undefined;
  forcePathStyle: boolean;
  /** Static credentials; when unset the AWS SDK's default chain (environment, profile, instance role) applies. */
  accessKeyId: string | undefined;
  secretAccessKey: string | undefined;
}

export interface OAuthClient {
  clientId: string;
  clientSecret: string;
  /** The provider's base URL: https://github.com, or Google's issuer https://accounts.google.com (tests point it at a local server). */
  issuer: string;
  /** GitHub's API base (https://api.github.com); unused for Google, whose userinfo endpoint comes from discovery. */
  apiUrl: string;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Record<string, string | undefined>;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Every variable this module reads, for the documentation check. */
export const settingNames = [
  'PORT', 'HOST', 'DATA_DIR', 'DATABASE_URL', 'PUBLIC_URL', 'WEB_URL', 'TRUSTED_ORIGINS',
  'TRUST_PROXY', 'LOG_LEVEL', 'NODE_ENV', 'RATE_LIMIT_PER_MINUTE', 'VALIDATE_RESPONSES',
  'REQUIRE_EMAIL_VERIFICATION', 'CONTACT_EMAIL', 'AUTH_RATE_LIMIT_PER_MINUTE',
  'EMAIL_PROVIDER', 'SMTP_URL', 'EMAIL_FROM', 'ADMIN_EMAILS',
  'GITHUB_CLIENT_ID', 'GITHUB_CLIENT_SECRET', 'GITHUB_URL', 'GITHUB_API_URL',
  'GOOGLE_CLIENT_ID', 'GOOGLE_CLIENT_SECRET', 'GOOGLE_ISSUER',
  'SECRET', 'MAX_UPLOAD_BYTES', 'STORAGE_DRIVER', 'S3_BUCKET', 'S3_REGION', 'S3_ENDPOINT', 'S3_FORCE_PATH_STYLE',
  'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY',
  'DB_STATEMENT_TIMEOUT_MS', 'DB_LOCK_TIMEOUT_MS', 'DB_IDLE_IN_TRANSACTION_TIMEOUT_MS', 'DB_DEADLINE_MS', 'DB_JOB_DEADLINE_MS',
  'AI_URL', 'AI_API_KEY', 'AI_HOST', 'AI_PORT', 'EMBEDDING_PROVIDER', 'OPENAI_BASE_URL', 'OPENAI_API_KEY', 'EMBEDDING_MODEL',
  'EXTRACT_TIMEOUT_SECONDS', 'EXTRACT_MEMORY_MB', 'MAX_EXTRACTED_CHARACTERS', 'EXTRACT_MAX_INFLATED_BYTES',
  'EXTRACT_MAX_PDF_PAGES', 'EXTRACT_MAX_HTML_DEPTH', 'OCR_MAX_PIXELS', 'OCR_TIMEOUT_SECONDS',
  'SEARCH_RANKING', 'WORKER', 'WORKER_CONCURRENCY', 'WORKER_BATCH_SIZE', 'JOB_LEASE_SECONDS',
  'STRIPE_SECRET_KEY', 'STRIPE_WEBHOOK_SECRET', 'STRIPE_API_URL',
  'STRIPE_PRICE_PRO_MONTH', 'STRIPE_PRICE_PRO_YEAR', 'STRIPE_PRICE_TEAM_MONTH', 'STRIPE_PRICE_TEAM_YEAR',
  'METRICS_TOKEN',
] as const;

export function loadConfig(env: Env = process.env): Config {
  const port = integer(env, 'PORT', 3000, 0, 65535);
  const host = text(env, 'HOST', '127.0.0.1');
  const environment = text(env, 'NODE_ENV', 'development');
  const publicUrl = url(env, 'PUBLIC_URL') ?? `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
  const webUrl = url(env, 'WEB_URL');
  const emailProvider = oneOf(env, 'EMAIL_PROVIDER', ['smtp', 'log', 'none'] as const, environment === 'production' ? 'none' : 'log');
  const smtpUrl = raw(env, 'SMTP_URL');
  if (emailProvider === 'smtp' && (!smtpUrl || !URL.canParse(smtpUrl) || !/^smtps?:$/.test(new URL(smtpUrl).protocol))) {
    throw new ConfigError('SMTP_URL must be an smtp:// or smtps:// URL when EMAIL_PROVIDER is smtp');
  }
  return {
    port,
    host,
    dataDir: resolve(text(env, 'DATA_DIR', './.data')),
    databaseUrl: databaseUrl(env),
    database: databaseSettings(env, environment),
    publicUrl: publicUrl.replace(/\/+$/, ''),
    webUrl: webUrl?.replace(/\/+$/, ''),
    trustedOrigins: origins(env, 'TRUSTED_ORIGINS'),
    trustProxy: trustProxy(env),
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    environment,
    rateLimitPerMinute: integer(env, 'RATE_LIMIT_PER_MINUTE', 300, 1, 1_000_000),
    validateResponses: boolean(env, 'VALIDATE_RESPONSES', environment !== 'production'),
    requireEmailVerification: boolean(env, 'REQUIRE_EMAIL_VERIFICATION', false),
    contactEmail: email(env, 'CONTACT_EMAIL'),
    authRateLimitPerMinute: integer(env, 'AUTH_RATE_LIMIT_PER_MINUTE', 10, 1, 1_000_000),
    emailProvider,
    smtpUrl,
    emailFrom: raw(env, 'EMAIL_FROM') ?? `Workspace API <no-reply@${mailDomain(publicUrl)}>`,
    adminEmails: (raw(env, 'ADMIN_EMAILS') ?? '').split(',').map((item) => item.trim().toLowerCase()).filter(Boolean),
    github: oauthClient(env, 'GITHUB', 'https://github.com', 'https://api.github.com'),
    google: oauthClient(env, 'GOOGLE', 'https://accounts.google.com', ''),
    secret: secret(env, environment),
    maxUploadBytes: integer(env, 'MAX_UPLOAD_BYTES', 26_214_400, 1, Number.MAX_SAFE_INTEGER),
    storage: storage(env),
    ai: aiSettings(env),
    searchRanking: oneOf(env, 'SEARCH_RANKING', ['hybrid', 'vector', 'fulltext'] as const, 'hybrid'),
    worker: {
      mode: workerMode(env),
      concurrency: integer(env, 'WORKER_CONCURRENCY', 2, 1, 64),
      // Batches pay on the embedded database, not on a server (queue.ts, Batches).
      batchSize: integer(env, 'WORKER_BATCH_SIZE', raw(env, 'DATABASE_URL') === undefined ? 4 : 1, 1, 100),
      // pg-boss checks heartbeats no more often than every 10 seconds.
      leaseSeconds: integer(env, 'JOB_LEASE_SECONDS', 60, 10, 86_400),
    },
    billing: billing(env),
    metricsToken: metricsToken(env, environment),
  };
}

/** Billing is on when the secret key and the webhook secret are both set; one without the other is a mistake. */
function billing(env: Env): BillingSettings | null {
  const secretKey = raw(env, 'STRIPE_SECRET_KEY');
  const webhookSecret = raw(env, 'STRIPE_WEBHOOK_SECRET');
  if (!secretKey && !webhookSecret) return null;
  if (!secretKey || !webhookSecret) throw new ConfigError('STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET must be set together');
  const price = (plan: string, interval: string) => raw(env, `STRIPE_PRICE_${plan}_${interval}`);
  const prices = (plan: 'PRO' | 'TEAM') => {
    const month = price(plan, 'MONTH');
    const year = price(plan, 'YEAR');
    return { ...(month ? { month } : {}), ...(year ? { year } : {}) };
  };
  return { secretKey, webhookSecret, apiUrl: url(env, 'STRIPE_API_URL')?.replace(/\/+$/, ''), prices: { pro: prices('PRO'), team: prices('TEAM') } };
}

function aiSettings(env: Env): AiSettings {
  // Not HOST: an API opened to the network (HOST=0.0.0.0 in a container) keeps its AI service private.
  const host = text(env, 'AI_HOST', '127.0.0.1');
  const port = integer(env, 'AI_PORT', 3001, 0, 65535);
  const provider = oneOf(env, 'EMBEDDING_PROVIDER', ['local', 'openai'] as const, 'local');
  const openaiKey = raw(env, 'OPENAI_API_KEY');
  const urlHost = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '[::1]' : isIP(host) === 6 ? `[${host}]` : host;
  return {
    url: (url(env, 'AI_URL') ?? `http://${urlHost}:${port}`).replace(/\/+$/, ''),
    apiKey: raw(env, 'AI_API_KEY'),
    host,
    port,
    provider,
    extraction: {
      timeoutMs: integer(env, 'EXTRACT_TIMEOUT_SECONDS', 60, 1, 100) * 1000,
      memoryMb: integer(env, 'EXTRACT_MEMORY_MB', 512, 64, 16384),
      maxCharacters: integer(env, 'MAX_EXTRACTED_CHARACTERS', 2_000_000, 1000, 100_000_000),
      maxInflatedBytes: integer(env, 'EXTRACT_MAX_INFLATED_BYTES', 128 * 1024 * 1024, 1024 * 1024, 8 * 1024 ** 3),
      maxPdfPages: integer(env, 'EXTRACT_MAX_PDF_PAGES', 2000, 1, 100_000),
      maxHtmlDepth: integer(env, 'EXTRACT_MAX_HTML_DEPTH', 256, 16, 10_000),
      maxImagePixels: integer(env, 'OCR_MAX_PIXELS', 36_000_000, 1_000_000, 500_000_000),
      ocrTimeoutMs: integer(env, 'OCR_TIMEOUT_SECONDS', 60, 1, 100) * 1000,
    },
    openai: {
      baseUrl: (url(env, 'OPENAI_BASE_URL') ?? 'https://api.openai.com/v1').replace(/\/+$/, ''),
      apiKey: openaiKey,
      model: text(env, 'EMBEDDING_MODEL', 'text-embedding-3-small'),
    },
  };
}

function raw(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === '' ? undefined : value;
}

function text(env: Env, name: string, fallback: string): string {
  return raw(env, name) ?? fallback;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${value}"`);
  }
  return Number(value);
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const value = raw(env, name)?.toLowerCase();
  if (value === undefined) return fallback;
  if (['1', 'true', 'yes', 'on'].includes(value)) return true;
  if (['0', 'false', 'no', 'off'].includes(value)) return false;
  throw new ConfigError(`${name} must be true or false, got "${value}"`);
}

/** TRUST_PROXY (see Config.trustProxy): false, a hop count, or a list of proxy addresses and subnets. */
function trustProxy(env: Env): false | number | string[] {
  const value = raw(env, 'TRUST_PROXY')?.toLowerCase();
  if (value === undefined || ['false', 'no', 'off'].includes(value)) return false;
  if (['true', 'yes', 'on'].includes(value)) return 1;
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    if (hops > 32) throw new ConfigError(`TRUST_PROXY must be at most 32 hops, got "${value}"`);
    return hops === 0 ? false : hops;
  }
  const items = value.split(',').map((item) => item.trim()).filter(Boolean);
  for (const item of items) {
    if (!isProxyAddress(item)) {
      throw new ConfigError(`TRUST_PROXY must be true, false, a hop count, or a list of addresses, CIDR subnets, loopback, linklocal and uniquelocal; got "${item}"`);
    }
  }
  return items;
}

function isProxyAddress(item: string): boolean {
  if (['loopback', 'linklocal', 'uniquelocal'].includes(item)) return true;
  const [address, bits, extra] = item.split('/');
  const family = isIP(address ?? '');
  if (family === 0 || extra !== undefined) return false;
  if (bits === undefined) return true;
  // Express also takes an IPv4 netmask after the slash (10.0.0.0/255.0.0.0).
  if (family === 4 && isIP(bits) === 4) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got "${value}"`);
  }
  return value as T;
}

function url(env: Env, name: string): string | undefined {
  const value = raw(env, name);
  if (value === undefined) return undefined;
  if (!URL.canParse(value) || !/^https?:$/.test(new URL(value).protocol)) {
    throw new ConfigError(`${name} must be an http(s) URL, got "${value}"`);
  }
  return value;
}

function email(env: Env, name: string): string | undefined {
  const value = raw(env, name);
  if (value === undefined) return undefined;
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value)) throw new ConfigError(`${name} must be an email address, got "${value}"`);
  return value;
}

/** A provider is enabled when both its client id and secret are set; one without the other is a mistake. */
function oauthClient(env: Env, prefix: 'GITHUB' | 'GOOGLE', issuer: string, apiUrl: string): OAuthClient | null {
  const clientId = raw(env, `${prefix}_CLIENT_ID`);
  const clientSecret = raw(env, `${prefix}_CLIENT_SECRET`);
  if (!clientId && !clientSecret) return null;
  if (!clientId || !clientSecret) throw new ConfigError(`${prefix}_CLIENT_ID and ${prefix}_CLIENT_SECRET must be set together`);
  const issuerName = prefix === 'GITHUB' ? 'GITHUB_URL' : 'GOOGLE_ISSUER';
  return {
    clientId,
    clientSecret,
    issuer: (url(env, issuerName) ?? issuer).replace(/\/+$/, ''),
    apiUrl: prefix === 'GITHUB' ? (url(env, 'GITHUB_API_URL') ?? apiUrl).replace(/\/+$/, '') : apiUrl,
  };
}

/** The PUBLIC_URL host for the default From address; an IP address is no mail domain, so `localhost` then. */
function mailDomain(publicUrl: string): string {
  const host = new URL(publicUrl).hostname;
  return isIP(host.replace(/^\[|\]$/g, '')) ? 'localhost' : host;
}

function secret(env: Env, environment: string): string | undefined {
  const value = raw(env, 'SECRET');
  // Instances share it, so a file of one machine's own will not do in production (see secret.ts).
  if (value === undefined && environment === 'production') throw new ConfigError('SECRET must be set in production (at least 32 characters)');
  if (value !== undefined && value.length < 32) throw new ConfigError('SECRET must be at least 32 characters');
  return value;
}

/**
 * GET /metrics tells whoever asks the traffic per procedure, the error rates and the job backlog.
 * In production it is never open: a deployment without a token stops here rather than serve it to anyone.
 */
function metricsToken(env: Env, environment: string): string | undefined {
  const value = raw(env, 'METRICS_TOKEN');
  if (value === undefined && environment === 'production') {
    throw new ConfigError('METRICS_TOKEN must be set in production: GET /metrics would otherwise be open to anyone who can reach the service');
  }
  return value;
}

function storage(env: Env): Config['storage'] {
  const driver = oneOf(env, 'STORAGE_DRIVER', ['local', 's3'] as const, 'local');
  if (driver === 'local') return { driver };
  const bucket = raw(env, 'S3_BUCKET');
  if (!bucket) throw new ConfigError('S3_BUCKET must be set when STORAGE_DRIVER is s3');
  const accessKeyId = raw(env, 'S3_ACCESS_KEY_ID');
  const secretAccessKey = raw(env, 'S3_SECRET_ACCESS_KEY');
  if (Boolean(accessKeyId) !== Boolean(secretAccessKey)) throw new ConfigError('S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY must be set together');
  return {
    driver,
    bucket,
    region: text(env, 'S3_REGION', 'us-east-1'),
    endpoint: url(env, 'S3_ENDPOINT'),
    forcePathStyle: boolean(env, 'S3_FORCE_PATH_STYLE', false),
    accessKeyId,
    secretAccessKey,
  };
}

/** The embedded database serves one connection, which the API holds: a worker process could not reach it. */
function workerMode(env: Env): WorkerSettings['mode'] {
  const external = raw(env, 'DATABASE_URL') !== undefined;
  const mode = oneOf(env, 'WORKER', ['process', 'inline', 'off'] as const, external ? 'process' : 'inline');
  if (mode === 'process' && !external) {
    throw new ConfigError('WORKER is process, which needs DATABASE_URL: the embedded database serves one connection, held by the API (use inline)');
  }
  return mode;
}

function databaseUrl(env: Env): string | undefined {
  const value = raw(env, 'DATABASE_URL');
  if (value === undefined) return undefined;
  if (!URL.canParse(value) || !/^postgres(ql)?:$/.test(new URL(value).protocol)) {
    throw new ConfigError('DATABASE_URL must be a postgres:// or postgresql:// URL');
  }
  return value;
}

/**
 * Server-side limits set on every database connection (milliseconds; 0 turns one off), so one
 * runaway statement, lock wait or forgotten transaction cannot hold a connection, and the locks it
 * took, for ever. On the embedded database PGlite accepts the
 * first two but enforces neither, and an idle-in-transaction timeout that fires there freezes the
 * process, so that one is left off in embedded mode (src/db/connection.ts).
 */
export interface DatabaseSettings {
  statementTimeoutMs: number;
  lockTimeoutMs: number;
  idleInTransactionTimeoutMs: number;
  /** Pool queries inside an open transaction throw (src/db/transaction-guard.ts); on outside production. */
  transactionGuard: boolean;
  /**
   * DB_DEADLINE_MS: the client-side deadline of each query and each transaction of an API request
   * (src/db/deadline.ts; 0: none). Unlike statement_timeout it holds when the server does not answer at all.
   */
  deadlineMs: number;
  /** DB_JOB_DEADLINE_MS: the same for the job worker's calls (its transactions do more, and nobody waits on a socket for them). */
  jobDeadlineMs: number;
}

/** PostgreSQL's millisecond settings stop at 2^31 - 1 (about 24.8 days). */
const MAX_TIMEOUT_MS = 2_147_483_647;

function databaseSettings(env: Env, environment: string): DatabaseSettings {
  const statementTimeoutMs = integer(env, 'DB_STATEMENT_TIMEOUT_MS', 8_000, 0, MAX_TIMEOUT_MS);
  const deadlineMs = integer(env, 'DB_DEADLINE_MS', 10_000, 0, MAX_TIMEOUT_MS);
  // The server should cancel a slow statement (and say why) before the client gives up on it.
  if (deadlineMs > 0 && statementTimeoutMs >= deadlineMs) {
    throw new ConfigError(`DB_STATEMENT_TIMEOUT_MS (${statementTimeoutMs}) must be below DB_DEADLINE_MS (${deadlineMs}), or DB_DEADLINE_MS 0`);
  }
  return {
    statementTimeoutMs,
    lockTimeoutMs: integer(env, 'DB_LOCK_TIMEOUT_MS', 10_000, 0, MAX_TIMEOUT_MS),
    idleInTransactionTimeoutMs: integer(env, 'DB_IDLE_IN_TRANSACTION_TIMEOUT_MS', 60_000, 0, MAX_TIMEOUT_MS),
    transactionGuard: environment !== 'production',
    deadlineMs,
    jobDeadlineMs: integer(env, 'DB_JOB_DEADLINE_MS', 60_000, 0, MAX_TIMEOUT_MS),
  };
}

/** A comma-separated list of origins; each must be a bare origin (scheme, host, port). */
function origins(env: Env, name: string): string[] {
  const value = raw(env, name);
  if (value === undefined) return [];
  return value.split(',').map((item) => item.trim()).filter(Boolean).map((item) => {
    if (!URL.canParse(item) || new URL(item).origin !== item.replace(/\/$/, '')) {
      throw new ConfigError(`${name} must list origins like https://app.example.com, got "${item}"`);
    }
    return new URL(item).origin;
  });
}
