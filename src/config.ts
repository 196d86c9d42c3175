/**
 * Settings, read from environment variables once at start. A bad value stops the start with a
 * message naming the variable; every setting has a default that makes the embedded mode work.
 * Each setting is declared once, in the JSON schema of src/config/schema.ts: Ajv validates the
 * environment against it (src/config/read.ts, with the validator codegen precompiles from it) and
 * docs/configuration.md is generated from it (codegen/configuration-doc.ts). Here: the rules across settings, and the Config they make.
 */
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { proxyList } from './config/formats.ts';
import { ConfigError, readSettings, type Env } from './config/read.ts';
import type { Settings } from './config/schema.ts';

export { ConfigError } from './config/read.ts';
export { settingNames } from './config/schema.ts';

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
  /**
   * MAIL_PER_RECIPIENT_LIMIT mails to one address per MAIL_PER_RECIPIENT_WINDOW_MINUTES, every kind
   * and sender together (email/outbox.ts); INVITATION_RESEND_COOLDOWN_SECONDS between two mails of
   * one invitation.
   */
  mailBudget: { perRecipient: number; windowMinutes: number; resendCooldownSeconds: number };
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
  /** BACKUP_INTERVAL_MINUTES and BACKUP_KEEP: backups the running service takes on the embedded database (docs/backups.md); null: none. */
  backupSchedule: { intervalMinutes: number; keep: number } | null;
  /**
   * Traces (src/telemetry/tracing.ts; the OTEL_* variables are the SDK's to read). trustIncoming,
   * TRACE_TRUST_INCOMING: a request's `traceparent` continues the client's trace instead of
   * becoming a link of a new one (src/http/request-span.ts).
   */
  tracing: { trustIncoming: boolean };
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
  /** MAX_FREE_ORGANIZATIONS_PER_USER: the organizations one user may own first without a live subscription. */
  maxFreeOrganizationsPerUser: number;
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
  /** How the local model runs (EMBEDDING_THREADS, EMBEDDING_BATCH_SIZE; src/ai-service/embedder.ts). */
  embedding: { threads: number; batchSize: number };
  /** AI_THREAD_NICE: the niceness the AI service's embedding and extraction threads give themselves. */
  threadNice: number;
  /** What one extraction may use and produce (src/ai-service/, docs/ai-service.md "Limits"). */
  extraction: ExtractionLimits;
}

/** Limits on one `/v1/extract` request; a document that breaks one fails its request (422, or 413 for maxBytes), never the service. */
export interface ExtractionLimits {
  /**
   * The largest document `/v1/extract` reads: MAX_UPLOAD_BYTES and 1 MiB of room, so that every
   * document the API stores can be read (a constant 26 MiB refused documents the API had stored
   * under a raised MAX_UPLOAD_BYTES, and a refusal while the worker is still sending can reach it
   * as a reset connection, retried as if the service were down).
   */
  maxBytes: number;
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
  /** MAX_QUEUED_JOBS_PER_ORGANIZATION: past it jobs.create and jobs.retry answer 429 (docs/jobs.md, Fairness). */
  maxQueuedPerOrganization: number;
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

export function loadConfig(env: Env = process.env): Config {
  const settings = readSettings(env);
  const { PORT: port, HOST: host, NODE_ENV: environment } = settings;
  const publicUrl = settings.PUBLIC_URL ?? `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
  const emailProvider = settings.EMAIL_PROVIDER ?? (environment === 'production' ? 'none' : 'log');
  const smtpUrl = settings.SMTP_URL;
  if (emailProvider === 'smtp' && (!smtpUrl || !URL.canParse(smtpUrl) || !/^smtps?:$/.test(new URL(smtpUrl).protocol))) {
    throw new ConfigError('SMTP_URL must be an smtp:// or smtps:// URL when EMAIL_PROVIDER is smtp');
  }
  const external = settings.DATABASE_URL !== undefined;
  const database = databaseSettings(settings, environment);
  const github = oauthClient(settings, 'GITHUB');
  const google = oauthClient(settings, 'GOOGLE');
  return {
    port,
    host,
    dataDir: resolve(settings.DATA_DIR),
    databaseUrl: settings.DATABASE_URL,
    database,
    publicUrl: trimSlashes(publicUrl),
    webUrl: settings.WEB_URL === undefined ? undefined : trimSlashes(settings.WEB_URL),
    trustedOrigins: settings.TRUSTED_ORIGINS.map((item) => new URL(item).origin),
    trustProxy: trustProxy(settings.TRUST_PROXY),
    logLevel: settings.LOG_LEVEL,
    environment,
    rateLimitPerMinute: settings.RATE_LIMIT_PER_MINUTE,
    validateResponses: settings.VALIDATE_RESPONSES ?? environment !== 'production',
    requireEmailVerification: settings.REQUIRE_EMAIL_VERIFICATION,
    contactEmail: settings.CONTACT_EMAIL,
    authRateLimitPerMinute: settings.AUTH_RATE_LIMIT_PER_MINUTE,
    emailProvider,
    smtpUrl,
    emailFrom: settings.EMAIL_FROM ?? `Workspace API <no-reply@${mailDomain(publicUrl)}>`,
    mailBudget: {
      perRecipient: settings.MAIL_PER_RECIPIENT_LIMIT,
      windowMinutes: settings.MAIL_PER_RECIPIENT_WINDOW_MINUTES,
      resendCooldownSeconds: settings.INVITATION_RESEND_COOLDOWN_SECONDS,
    },
    adminEmails: settings.ADMIN_EMAILS.map((item) => item.toLowerCase()),
    github,
    google,
    secret: secret(settings, environment),
    maxUploadBytes: settings.MAX_UPLOAD_BYTES,
    storage: storage(settings),
    ai: aiSettings(settings),
    searchRanking: settings.SEARCH_RANKING,
    worker: {
      mode: workerMode(settings, external),
      concurrency: settings.WORKER_CONCURRENCY,
      // Batches pay on the embedded database, not on a server (queue.ts, Batches).
      batchSize: settings.WORKER_BATCH_SIZE ?? (external ? 1 : 4),
      leaseSeconds: settings.JOB_LEASE_SECONDS,
      maxQueuedPerOrganization: settings.MAX_QUEUED_JOBS_PER_ORGANIZATION,
    },
    billing: billing(settings),
    metricsToken: metricsToken(settings, environment),
    backupSchedule: settings.BACKUP_INTERVAL_MINUTES === undefined ? null : { intervalMinutes: settings.BACKUP_INTERVAL_MINUTES, keep: settings.BACKUP_KEEP },
    tracing: { trustIncoming: settings.TRACE_TRUST_INCOMING },
  };
}

function trimSlashes(url: string): string {
  return url.replace(/\/+$/, '');
}

/** Billing is on when the secret key and the webhook secret are both set; one without the other is a mistake. */
function billing(settings: Settings): BillingSettings | null {
  const { STRIPE_SECRET_KEY: secretKey, STRIPE_WEBHOOK_SECRET: webhookSecret } = settings;
  if (!secretKey && !webhookSecret) return null;
  if (!secretKey || !webhookSecret) throw new ConfigError('STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET must be set together');
  const prices = (month: string | undefined, year: string | undefined) => ({ ...(month ? { month } : {}), ...(year ? { year } : {}) });
  return {
    secretKey,
    webhookSecret,
    apiUrl: settings.STRIPE_API_URL === undefined ? undefined : trimSlashes(settings.STRIPE_API_URL),
    prices: {
      pro: prices(settings.STRIPE_PRICE_PRO_MONTH, settings.STRIPE_PRICE_PRO_YEAR),
      team: prices(settings.STRIPE_PRICE_TEAM_MONTH, settings.STRIPE_PRICE_TEAM_YEAR),
    },
    maxFreeOrganizationsPerUser: settings.MAX_FREE_ORGANIZATIONS_PER_USER,
  };
}

function aiSettings(settings: Settings): AiSettings {
  // Not HOST: an API opened to the network (HOST=0.0.0.0 in a container) keeps its AI service private.
  const { AI_HOST: host, AI_PORT: port } = settings;
  const urlHost = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '[::1]' : isIP(host) === 6 ? `[${host}]` : host;
  return {
    url: trimSlashes(settings.AI_URL ?? `http://${urlHost}:${port}`),
    apiKey: settings.AI_API_KEY,
    host,
    port,
    provider: settings.EMBEDDING_PROVIDER,
    embedding: { threads: settings.EMBEDDING_THREADS ?? (availableParallelism() > 1 ? 2 : 1), batchSize: settings.EMBEDDING_BATCH_SIZE },
    threadNice: settings.AI_THREAD_NICE,
    extraction: {
      maxBytes: settings.MAX_UPLOAD_BYTES + 1024 * 1024,
      timeoutMs: settings.EXTRACT_TIMEOUT_SECONDS * 1000,
      memoryMb: settings.EXTRACT_MEMORY_MB,
      maxCharacters: settings.MAX_EXTRACTED_CHARACTERS,
      maxInflatedBytes: settings.EXTRACT_MAX_INFLATED_BYTES,
      maxPdfPages: settings.EXTRACT_MAX_PDF_PAGES,
      maxHtmlDepth: settings.EXTRACT_MAX_HTML_DEPTH,
      maxImagePixels: settings.OCR_MAX_PIXELS,
      ocrTimeoutMs: settings.OCR_TIMEOUT_SECONDS * 1000,
    },
    openai: {
      baseUrl: trimSlashes(settings.OPENAI_BASE_URL),
      apiKey: settings.OPENAI_API_KEY,
      model: settings.EMBEDDING_MODEL,
    },
  };
}

/** TRUST_PROXY (see Config.trustProxy; the schema's `trust-proxy` format has checked it): false, a hop count, or a list of proxies. */
function trustProxy(value: string | undefined): false | number | string[] {
  const lower = value?.toLowerCase();
  if (lower === undefined || ['false', 'no', 'off'].includes(lower)) return false;
  if (['true', 'yes', 'on'].includes(lower)) return 1;
  if (/^\d+$/.test(lower)) return Number(lower) === 0 ? false : Number(lower);
  return proxyList(lower);
}

/** A provider is enabled when both its client id and secret are set; one without the other is a mistake. */
function oauthClient(settings: Settings, prefix: 'GITHUB' | 'GOOGLE'): OAuthClient | null {
  const clientId = settings[`${prefix}_CLIENT_ID`];
  const clientSecret = settings[`${prefix}_CLIENT_SECRET`];
  if (!clientId && !clientSecret) return null;
  if (!clientId || !clientSecret) throw new ConfigError(`${prefix}_CLIENT_ID and ${prefix}_CLIENT_SECRET must be set together`);
  return {
    clientId,
    clientSecret,
    issuer: trimSlashes(prefix === 'GITHUB' ? settings.GITHUB_URL : settings.GOOGLE_ISSUER),
    // Google's userinfo endpoint comes from discovery.
    apiUrl: prefix === 'GITHUB' ? trimSlashes(settings.GITHUB_API_URL) : '',
  };
}

/** The PUBLIC_URL host for the default From address; an IP address is no mail domain, so `localhost` then. */
function mailDomain(publicUrl: string): string {
  const host = new URL(publicUrl).hostname;
  return isIP(host.replace(/^\[|\]$/g, '')) ? 'localhost' : host;
}

/** The schema checks its length (at least 32 characters). */
function secret(settings: Settings, environment: string): string | undefined {
  // Instances share it, so a file of one machine's own will not do in production (see secret.ts).
  if (settings.SECRET === undefined && environment === 'production') throw new ConfigError('SECRET must be set in production (at least 32 characters)');
  return settings.SECRET;
}

/**
 * GET /metrics tells whoever asks the traffic per procedure, the error rates and the job backlog.
 * In production it is never open: a deployment without a token stops here rather than serve it to anyone.
 */
function metricsToken(settings: Settings, environment: string): string | undefined {
  if (settings.METRICS_TOKEN === undefined && environment === 'production') {
    throw new ConfigError('METRICS_TOKEN must be set in production: GET /metrics would otherwise be open to anyone who can reach the service');
  }
  return settings.METRICS_TOKEN;
}

function storage(settings: Settings): Config['storage'] {
  const driver = settings.STORAGE_DRIVER;
  if (driver === 'local') return { driver };
  const bucket = settings.S3_BUCKET;
  if (!bucket) throw new ConfigError('S3_BUCKET must be set when STORAGE_DRIVER is s3');
  const { S3_ACCESS_KEY_ID: accessKeyId, S3_SECRET_ACCESS_KEY: secretAccessKey } = settings;
  if (Boolean(accessKeyId) !== Boolean(secretAccessKey)) throw new ConfigError('S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY must be set together');
  return {
    driver,
    bucket,
    region: settings.S3_REGION,
    endpoint: settings.S3_ENDPOINT,
    forcePathStyle: settings.S3_FORCE_PATH_STYLE,
    accessKeyId,
    secretAccessKey,
  };
}

/** The embedded database serves one connection, which the API holds: a worker process could not reach it. */
function workerMode(settings: Settings, external: boolean): WorkerSettings['mode'] {
  const mode = settings.WORKER ?? (external ? 'process' : 'inline');
  if (mode === 'process' && !external) {
    throw new ConfigError('WORKER is process, which needs DATABASE_URL: the embedded database serves one connection, held by the API (use inline)');
  }
  return mode;
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
  /**
   * DATABASE_POOL_MODE: `transaction` when DATABASE_URL is a transaction-mode pooler (no prepared
   * statements, no startup parameters, timeouts per transaction; src/db/connection.ts).
   */
  poolMode: PoolMode;
  /** DATABASE_DIRECT_URL: the server itself, for what needs a session (migrations, LISTEN); undefined: DATABASE_URL. */
  directUrl: string | undefined;
  /** DB_TRACE_QUERY_TEXT: db.query spans carry the statement's text, never its values (db/query-spans.ts). */
  traceQueryText?: boolean;
}

export type PoolMode = 'session' | 'transaction';

function databaseSettings(settings: Settings, environment: string): DatabaseSettings {
  const { DB_STATEMENT_TIMEOUT_MS: statementTimeoutMs, DB_DEADLINE_MS: deadlineMs } = settings;
  // The server should cancel a slow statement (and say why) before the client gives up on it.
  if (deadlineMs > 0 && statementTimeoutMs >= deadlineMs) {
    throw new ConfigError(`DB_STATEMENT_TIMEOUT_MS (${statementTimeoutMs}) must be below DB_DEADLINE_MS (${deadlineMs}), or DB_DEADLINE_MS 0`);
  }
  // A transaction-mode pooler hands a server connection to a client for one transaction only, and
  // LISTEN (job streams, revocations, the queue's wake-ups) needs one for good: refuse rather than
  // start with streams that silently never hear a notification (docs/deploying.md).
  const poolMode: PoolMode = settings.DATABASE_URL !== undefined && settings.DATABASE_POOL_MODE === 'transaction' ? 'transaction' : 'session';
  if (poolMode === 'transaction' && settings.DATABASE_DIRECT_URL === undefined) {
    throw new ConfigError(
      'DATABASE_POOL_MODE is transaction, which needs DATABASE_DIRECT_URL: migrations and LISTEN need a session of their own, which a transaction-mode pooler does not keep. Set DATABASE_DIRECT_URL to the PostgreSQL server itself (not the pooler); docs/deploying.md',
    );
  }
  return {
    statementTimeoutMs,
    lockTimeoutMs: settings.DB_LOCK_TIMEOUT_MS,
    idleInTransactionTimeoutMs: settings.DB_IDLE_IN_TRANSACTION_TIMEOUT_MS,
    transactionGuard: environment !== 'production',
    deadlineMs,
    jobDeadlineMs: settings.DB_JOB_DEADLINE_MS,
    poolMode,
    directUrl: settings.DATABASE_URL !== undefined ? settings.DATABASE_DIRECT_URL : undefined,
    traceQueryText: settings.DB_TRACE_QUERY_TEXT,
  };
}
