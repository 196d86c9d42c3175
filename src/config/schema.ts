/**
 * Every setting, declared once: a JSON schema over the environment variables. Ajv validates the
 * environment against it and fills in the defaults (src/config/read.ts, through the validator
 * `make codegen` precompiles from it: generated/config-validator.cjs), its error messages come
 * from it, and docs/configuration.md is generated from it (codegen/configuration-doc.ts).
 *
 * Besides the standard keywords (type, default, enum, minimum, maximum, minLength, format, items,
 * description), two annotations, for the table and the reader:
 * - `x-default`: how the table states the default when it is computed (from other settings) or
 *   deserves a word; the value itself is then computed in src/config.ts.
 * - `x-read-when`: the setting is read only when these other settings are as stated (`true`: set);
 *   otherwise it is ignored, whatever its value. Checked on the raw values, before validation.
 * Descriptions are Markdown, written for docs/configuration.md (links are relative to docs/).
 * Formats are defined in src/config/formats.ts; rules across settings stay in src/config.ts.
 */

interface SettingSchema {
  type: 'integer' | 'boolean' | 'string' | 'array';
  description: string;
  default?: number | boolean | string | readonly string[];
  enum?: readonly string[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  format?: string;
  items?: { type: 'string'; format?: string };
  'x-default'?: string;
  'x-read-when'?: Record<string, string | true>;
}

/** PostgreSQL's millisecond settings stop at 2^31 - 1 (about 24.8 days). */
const MAX_TIMEOUT_MS = 2_147_483_647;

const S3 = { STORAGE_DRIVER: 's3' } as const;
const GITHUB = { GITHUB_CLIENT_ID: true, GITHUB_CLIENT_SECRET: true } as const;
const GOOGLE = { GOOGLE_CLIENT_ID: true, GOOGLE_CLIENT_SECRET: true } as const;
const STRIPE = { STRIPE_SECRET_KEY: true, STRIPE_WEBHOOK_SECRET: true } as const;

export const configSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 3000, description: 'TCP port to listen on.' },
    HOST: {
      type: 'string',
      default: '127.0.0.1',
      description: 'Address to listen on. Use `0.0.0.0` to accept connections from other machines (e.g. in a container).',
    },
    DATA_DIR: {
      type: 'string',
      default: './.data',
      'x-default': '`./.data` (relative to the working directory)',
      description:
        'Data directory. The embedded database keeps its files in `<DATA_DIR>/pg` and its lock file at `<DATA_DIR>/pg.lock`; the local storage driver keeps documents in `<DATA_DIR>/uploads`; the generated `SECRET` is `<DATA_DIR>/secret`.',
    },
    DATABASE_URL: {
      type: 'string',
      format: 'postgres-url',
      'x-default': 'unset (embedded PGlite)',
      description: 'URL of a PostgreSQL 15+ server with the pgvector and pgcrypto extensions available. When set, the embedded database is not started.',
    },
    DATABASE_DIRECT_URL: {
      type: 'string',
      format: 'postgres-url',
      'x-default': 'unset (everything uses `DATABASE_URL`)',
      'x-read-when': { DATABASE_URL: true },
      description:
        "URL of the PostgreSQL server itself, when `DATABASE_URL` points at a connection pooler: migrations and LISTEN (job streams, stream revocations, the job queue's wake-ups) use it, as they need a session of their own. Required with `DATABASE_POOL_MODE=transaction` ([deploying.md](deploying.md)).",
    },
    DATABASE_POOL_MODE: {
      type: 'string',
      enum: ['session', 'transaction'],
      default: 'session',
      'x-read-when': { DATABASE_URL: true },
      description:
        '`transaction` when `DATABASE_URL` is a pooler in transaction mode (PgBouncer `pool_mode = transaction`, most managed poolers): prepared statements are off, no startup parameters are sent, and the statement, lock and idle-in-transaction timeouts are set with `SET LOCAL` at the start of each transaction instead of once per connection. Needs `DATABASE_DIRECT_URL`. `session` for a server or a session-mode pooler ([deploying.md](deploying.md)).',
    },
    DB_STATEMENT_TIMEOUT_MS: {
      type: 'integer',
      minimum: 0,
      maximum: MAX_TIMEOUT_MS,
      default: 8000,
      description:
        'Milliseconds a statement may run before the server cancels it; 0 turns it off. Set on every connection; not enforced by the embedded PGlite. Migrations are exempt. Must be below `DB_DEADLINE_MS` (unless that is 0), so a slow statement is cancelled by the server before the client gives up on it.',
    },
    DB_LOCK_TIMEOUT_MS: {
      type: 'integer',
      minimum: 0,
      maximum: MAX_TIMEOUT_MS,
      default: 10000,
      description: 'Milliseconds a statement may wait for a lock; 0 turns it off. Migrations are exempt.',
    },
    DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: {
      type: 'integer',
      minimum: 0,
      maximum: MAX_TIMEOUT_MS,
      default: 60000,
      description: 'Milliseconds a session may sit idle inside a transaction before the server ends it; 0 turns it off. Not set on the embedded database.',
    },
    DB_DEADLINE_MS: {
      type: 'integer',
      minimum: 0,
      maximum: MAX_TIMEOUT_MS,
      default: 10000,
      description:
        "The client's own deadline, in milliseconds, on each database query and each transaction of an API request; 0 turns it off. Unlike the server's timeouts it holds when the server does not answer at all (stopped, hung, cut off): the request then answers 503 `SERVICE_UNAVAILABLE`. A statement past it is cancelled on the server; when the server does not answer a fresh connection either, the pool's connections are dropped and made again on demand.",
    },
    DB_JOB_DEADLINE_MS: {
      type: 'integer',
      minimum: 0,
      maximum: MAX_TIMEOUT_MS,
      default: 60000,
      description: "The same deadline for the job worker's database calls (each statement is still bounded by `DB_STATEMENT_TIMEOUT_MS`); 0 turns it off. Migrations have none.",
    },
    DB_TRACE_QUERY_TEXT: {
      type: 'boolean',
      default: false,
      description:
        'While tracing is on ([observability.md](observability.md)), each `db.query` span also carries the statement as the code wrote it (`db.query.text`), with `$1`, `$2`... where the values go (never the values), up to 2 KB. Off by default: the spans name the operation only.',
    },
    PUBLIC_URL: {
      type: 'string',
      format: 'http-url',
      'x-default': '`http://<HOST>:<PORT>` (`127.0.0.1` when `HOST` is `0.0.0.0`)',
      description:
        "The service's external URL; trailing slashes are dropped. The base of emailed links (verification, password reset, invitations), of the local driver's upload and download addresses and of the social sign-in redirect URIs. Its origin is trusted for cookie requests and redirects; `https` makes the session cookie `Secure`.",
    },
    WEB_URL: {
      type: 'string',
      format: 'http-url',
      description: 'URL of the web app. Its origin is allowed by CORS, with credentials, and trusted for cookie requests and redirects; it is where social sign-in lands by default.',
    },
    TRUSTED_ORIGINS: {
      type: 'array',
      items: { type: 'string', format: 'origin' },
      default: [],
      description: 'Origins that CORS allows, with credentials, and that are trusted for cookie requests and redirects.',
    },
    TRUST_PROXY: {
      type: 'string',
      format: 'trust-proxy',
      'x-default': '`false`',
      description:
        "Which proxies in front of the service to trust for `X-Forwarded-For` (Express's `trust proxy`): none (`false`, `0`); a hop count such as `2` (`true` is one hop); or a list of proxy addresses and subnets (`10.0.0.0/8`). The client address (limiters, logs) is then the one the nearest trusted proxy saw; IPv6 clients share a bucket per /64.",
    },
    LOG_LEVEL: {
      type: 'string',
      enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
      default: 'info',
      description: 'pino level. Logs are JSON lines on stdout.',
    },
    NODE_ENV: {
      type: 'string',
      default: 'development',
      description: '`production` switches response validation off by default, makes `EMAIL_PROVIDER` default to `none` and requires `SECRET` and `METRICS_TOKEN`.',
    },
    RATE_LIMIT_PER_MINUTE: {
      type: 'integer',
      minimum: 1,
      maximum: 1_000_000,
      default: 300,
      description: 'The shared per-IP limit, in requests per minute, on `/rpc/*` and `/api/v1/*`.',
    },
    VALIDATE_RESPONSES: {
      type: 'boolean',
      'x-default': '`true` unless `NODE_ENV=production`',
      description: "Check every procedure's answer against the contract. An answer that breaks it becomes a 500 and is logged.",
    },
    REQUIRE_EMAIL_VERIFICATION: {
      type: 'boolean',
      default: false,
      description: 'When true, sign-up sends a verification email and returns no token, and sign-in refuses unverified emails (403 `EMAIL_NOT_VERIFIED`). Reported by `system.authConfig`.',
    },
    CONTACT_EMAIL: {
      type: 'string',
      format: 'email',
      description: 'Where `contact.send` forwards messages. `contact.send` answers 412 until this address and an email provider are both configured.',
    },
    AUTH_RATE_LIMIT_PER_MINUTE: {
      type: 'integer',
      minimum: 1,
      maximum: 1_000_000,
      default: 10,
      description:
        'Per-IP budget per minute of sign-up, sign-in, password change, password reset, verification email and the invitation routes (invite, accept, reject, cancel); every other `/api/auth/*` route gets ten times as much.',
    },
    MAIL_PER_RECIPIENT_LIMIT: {
      type: 'integer',
      minimum: 1,
      maximum: 1_000_000,
      default: 10,
      description:
        'Mails one address may receive per `MAIL_PER_RECIPIENT_WINDOW_MINUTES`, all kinds together (invitations and their re-sends, verification and password-reset links) and whoever asks for them. Past it an invitation answers 429; a verification or reset link is not sent (the answer stays the same) and the refusal is logged ([rate-limits.md](rate-limits.md)).',
    },
    MAIL_PER_RECIPIENT_WINDOW_MINUTES: {
      type: 'integer',
      minimum: 1,
      maximum: 10_080,
      default: 60,
      description: 'The window of `MAIL_PER_RECIPIENT_LIMIT`, in minutes (at most a week).',
    },
    INVITATION_RESEND_COOLDOWN_SECONDS: {
      type: 'integer',
      minimum: 0,
      maximum: 86_400,
      default: 60,
      description: 'How long after an invitation was mailed `resend: true` answers 429 (with `Retry-After`) instead of mailing it again. `0`: no cooldown (the per-recipient budget still applies).',
    },
    EMAIL_PROVIDER: {
      type: 'string',
      enum: ['smtp', 'log', 'none'],
      'x-default': '`log` (`none` when `NODE_ENV=production`)',
      description: '`smtp` sends through `SMTP_URL`; `log` writes each message (with its links) to the log instead of sending it; `none` sends nothing, and features that need mail answer 412.',
    },
    SMTP_URL: {
      type: 'string',
      description: '`smtp://user:pass@host:587` or `smtps://...`; required, and checked, when `EMAIL_PROVIDER=smtp`. `smtp://127.0.0.1:2525` for `npm run mail-catcher`.',
    },
    EMAIL_FROM: {
      type: 'string',
      'x-default': '`Workspace API <no-reply@<PUBLIC_URL host>>` (`localhost` when that host is an IP address)',
      description: 'The From address of every email.',
    },
    ADMIN_EMAILS: {
      type: 'array',
      items: { type: 'string' },
      default: [],
      description: 'Emails (compared in lower case) that are platform admins: granted at start to existing users and at sign-up to new ones.',
    },
    GITHUB_CLIENT_ID: {
      type: 'string',
      description: 'With `GITHUB_CLIENT_SECRET` (both or neither), enables GitHub sign-in. See [social-sign-in.md](social-sign-in.md).',
    },
    GITHUB_CLIENT_SECRET: { type: 'string', description: 'The secret of the GitHub OAuth app (with `GITHUB_CLIENT_ID`).' },
    GITHUB_URL: {
      type: 'string',
      format: 'http-url',
      default: 'https://github.com',
      'x-read-when': GITHUB,
      description: "GitHub's web base URL (GitHub Enterprise, or a local test server).",
    },
    GITHUB_API_URL: {
      type: 'string',
      format: 'http-url',
      default: 'https://api.github.com',
      'x-read-when': GITHUB,
      description: "GitHub's API base URL (GitHub Enterprise, or a local test server).",
    },
    GOOGLE_CLIENT_ID: {
      type: 'string',
      description: 'With `GOOGLE_CLIENT_SECRET` (both or neither), enables Google sign-in. See [social-sign-in.md](social-sign-in.md).',
    },
    GOOGLE_CLIENT_SECRET: { type: 'string', description: 'The secret of the Google OAuth client (with `GOOGLE_CLIENT_ID`).' },
    GOOGLE_ISSUER: {
      type: 'string',
      format: 'http-url',
      default: 'https://accounts.google.com',
      'x-read-when': GOOGLE,
      description: "Google's OpenID issuer; its endpoints are discovered from it.",
    },
    SECRET: {
      type: 'string',
      minLength: 32,
      'x-default': 'made once in `<DATA_DIR>/secret` (required when `NODE_ENV=production`)',
      description: 'HMAC key of signed upload/download URLs and list cursors. Give every instance the same value.',
    },
    MAX_UPLOAD_BYTES: {
      type: 'integer',
      minimum: 1,
      maximum: Number.MAX_SAFE_INTEGER,
      default: 26_214_400,
      'x-default': '`26214400` (25 MiB)',
      description:
        'Largest document accepted by documents.createUpload, documents.complete and the local `PUT /uploads/...` route. The AI service reads documents up to this size plus 1 MiB: where it runs apart from the API (AI_URL), give it the same value.',
    },
    STORAGE_DRIVER: {
      type: 'string',
      enum: ['local', 's3'],
      default: 'local',
      description: '`local` keeps document bytes under `<DATA_DIR>/uploads` and serves the signed `/uploads/...` routes; `s3` uses a bucket (the `/uploads` routes do not exist then).',
    },
    S3_BUCKET: { type: 'string', 'x-read-when': S3, description: 'The bucket; required with `STORAGE_DRIVER=s3`.' },
    S3_REGION: { type: 'string', default: 'us-east-1', 'x-read-when': S3, description: "The bucket's region." },
    S3_ENDPOINT: {
      type: 'string',
      format: 'http-url',
      'x-default': 'unset (AWS)',
      'x-read-when': S3,
      description: 'An S3-compatible endpoint (MinIO, R2, `npm run s3-local`, ...).',
    },
    S3_FORCE_PATH_STYLE: {
      type: 'boolean',
      default: false,
      'x-read-when': S3,
      description: 'Address buckets by path rather than by host name.',
    },
    S3_ACCESS_KEY_ID: {
      type: 'string',
      'x-read-when': S3,
      description: "Static credentials, with `S3_SECRET_ACCESS_KEY` (both or neither); without them the AWS SDK's default chain (environment, profile, instance role) applies.",
    },
    S3_SECRET_ACCESS_KEY: { type: 'string', 'x-read-when': S3, description: 'The secret of `S3_ACCESS_KEY_ID`.' },
    AI_URL: {
      type: 'string',
      format: 'http-url',
      'x-default': '`http://<AI_HOST>:<AI_PORT>`',
      description: 'Where the API and the worker reach the AI service: the companion (`/health`, `/v1/embeddings`, `/v1/extract`) or any OpenAI-compatible base URL for embeddings.',
    },
    AI_API_KEY: {
      type: 'string',
      'x-default': 'unset (`serve` makes one for its child)',
      description:
        "The companion's key: it answers every route but `/health` only to `Authorization: Bearer <AI_API_KEY>` (401 otherwise), and the API's client sends it. `serve` generates a fresh key for the AI service it starts when none is set; a separately run `ai` without a key answers anyone who can reach it on loopback, and with `NODE_ENV=production` and a non-loopback `AI_HOST` it refuses to start.",
    },
    AI_HOST: {
      type: 'string',
      default: '127.0.0.1',
      description: 'Where `serve` and `ai` start the companion AI service. Loopback whatever `HOST` says, so `HOST=0.0.0.0` opens the API, not the AI service.',
    },
    AI_PORT: {
      type: 'integer',
      minimum: 0,
      maximum: 65535,
      default: 3001,
      description: 'Port of the companion AI service started by `serve` and `ai` (on `AI_HOST`); `0` takes any free port, and the default `AI_URL` of `serve` follows it.',
    },
    EMBEDDING_PROVIDER: {
      type: 'string',
      enum: ['local', 'openai'],
      default: 'local',
      description:
        "The companion's embedder: `local` (the offline sentence-embedding model all-MiniLM-L6-v2, 384 dimensions, installed with the dependencies; searches cost no credit) or `openai` (forwards to `OPENAI_BASE_URL`). Switching re-indexes every document in the background ([ai-service.md](ai-service.md)).",
    },
    EMBEDDING_THREADS: {
      type: 'integer',
      minimum: 1,
      maximum: 64,
      'x-default': '2, or 1 on a machine of one core',
      description:
        "Threads that embed documents with the local model (`EMBEDDING_PROVIDER=local`), at `AI_THREAD_NICE`: each holds its own copy of the model (about 130 MiB of memory once it has embedded: `bench/ai-memory.ts`) and runs one onnxruntime thread, and each batch goes to whichever is free. Copies rather than one inference on several onnxruntime threads, which wait for each other at every step of the model whenever the API takes a core from one of them: on two cores shared with the API two copies embedded 1.4-1.5 times what one inference on two threads did, and 1.1 times on idle cores ([benchmarks.md](benchmarks.md#two-copies-of-the-model-issue-38-2026-12-07)). Search queries have a thread of their own (one onnxruntime thread at the API's priority), whatever this says.",
    },
    EMBEDDING_BATCH_SIZE: {
      type: 'integer',
      minimum: 1,
      maximum: 64,
      default: 8,
      description:
        "The most texts one inference of the local model takes for documents: a batch gathers the requests waiting, of several organizations, each organization waiting getting an equal share of it ([ai-service.md](ai-service.md#queues)); a document's texts of similar length go together, so little is padding.",
    },
    AI_THREAD_NICE: {
      type: 'integer',
      minimum: 0,
      maximum: 19,
      default: 10,
      description:
        "The scheduling niceness (Linux: per thread) of the AI service's threads that embed documents and read uploaded files. Above the API's 0 the API's requests get the CPU first while documents are indexed (at 0, two embedding threads halved the API's requests per second in the soak), and indexing takes what is left: under a load that keeps every core busy it falls behind and catches up when the load eases. Search queries are embedded on their own thread at the API's priority, so they do not wait for it. `0` makes indexing share the CPU equally with the API.",
    },
    OPENAI_BASE_URL: {
      type: 'string',
      format: 'http-url',
      default: 'https://api.openai.com/v1',
      description: 'The OpenAI-compatible provider the companion forwards to with `EMBEDDING_PROVIDER=openai` (asked for 384 dimensions).',
    },
    OPENAI_API_KEY: { type: 'string', description: "That provider's key. Without it the companion's health answers `ok: false` when `EMBEDDING_PROVIDER=openai`." },
    EMBEDDING_MODEL: { type: 'string', default: 'text-embedding-3-small', description: 'The model asked of that provider.' },
    EXTRACT_TIMEOUT_SECONDS: {
      type: 'integer',
      minimum: 1,
      maximum: 100,
      default: 60,
      description: "Wall time of the thread that reads one document; the thread is killed when it runs over, and that document's job fails. See [ai-service.md](ai-service.md#limits).",
    },
    EXTRACT_MEMORY_MB: {
      type: 'integer',
      minimum: 64,
      maximum: 16384,
      default: 512,
      description: 'Heap and buffers, together, of the thread that reads one document; the thread is killed when it runs over.',
    },
    MAX_EXTRACTED_CHARACTERS: {
      type: 'integer',
      minimum: 1000,
      maximum: 100_000_000,
      default: 2_000_000,
      description: 'A document whose text is longer is refused (its job fails saying so), not truncated.',
    },
    EXTRACT_MAX_INFLATED_BYTES: {
      type: 'integer',
      minimum: 1024 * 1024,
      maximum: 8 * 1024 ** 3,
      default: 128 * 1024 * 1024,
      'x-default': '`134217728` (128 MiB)',
      description: "Decompressed bytes of a PDF's streams or a DOCX's zip entries, together, checked before and while inflating.",
    },
    EXTRACT_MAX_PDF_PAGES: { type: 'integer', minimum: 1, maximum: 100_000, default: 2000, description: 'Pages of a PDF.' },
    EXTRACT_MAX_HTML_DEPTH: { type: 'integer', minimum: 16, maximum: 10_000, default: 256, description: 'Element nesting depth of an HTML page.' },
    OCR_MAX_PIXELS: {
      type: 'integer',
      minimum: 1_000_000,
      maximum: 500_000_000,
      default: 36_000_000,
      description: 'Pixels (width × height) of an image read by OCR, checked from its header, before decoding.',
    },
    OCR_TIMEOUT_SECONDS: {
      type: 'integer',
      minimum: 1,
      maximum: 100,
      default: 60,
      description: "Time of one image's recognition; the OCR worker is stopped when it runs over.",
    },
    SEARCH_RANKING: {
      type: 'string',
      enum: ['hybrid', 'vector', 'fulltext'],
      default: 'hybrid',
      description:
        'How documents.search ranks: `hybrid` (reciprocal-rank fusion of vector similarity and BM25 full text), or `vector` or `fulltext` alone (for comparison; the retrieval benchmark uses them).',
    },
    WORKER: {
      type: 'string',
      enum: ['process', 'inline', 'off'],
      'x-default': '`process` with `DATABASE_URL`, else `inline`',
      description:
        "`process` runs the job worker as a child process of `serve` and `api` (its own event loop and core; started again if it dies, stopped with them; needs `DATABASE_URL`); `inline` runs it inside the API's process (the only way on the embedded database, whose one connection the API holds); `off` leaves jobs to separate `main.ts worker` processes.",
    },
    WORKER_CONCURRENCY: { type: 'integer', minimum: 1, maximum: 64, default: 2, description: 'pg-boss workers in one worker process.' },
    WORKER_BATCH_SIZE: {
      type: 'integer',
      minimum: 1,
      maximum: 100,
      'x-default': '`4` on the embedded database, `1` with `DATABASE_URL`',
      description:
        "Jobs each of those workers fetches in one statement and runs together; each job still succeeds, fails and retries alone. Jobs at once: `WORKER_CONCURRENCY` × `WORKER_BATCH_SIZE`. Batches doubled the queue's rate on the embedded database and slowed it on a server ([benchmarks.md](benchmarks.md)).",
    },
    JOB_LEASE_SECONDS: {
      type: 'integer',
      minimum: 10,
      maximum: 86_400,
      default: 60,
      description: 'A running job whose worker stops sending heartbeats for this long is picked up again by another worker (pg-boss checks heartbeats no more often than every 10 seconds).',
    },
    BACKUP_INTERVAL_MINUTES: {
      type: 'integer',
      minimum: 1,
      maximum: 525_600,
      description:
        'On the embedded database: the running service takes a backup every this many minutes into `DATA_DIR/backups` (the first one an interval after its start) and keeps the newest `BACKUP_KEEP`. Unset: none (take them with `node src/main.ts backup <path>`). Ignored with `DATABASE_URL`. See [backups.md](backups.md).',
    },
    BACKUP_KEEP: {
      type: 'integer',
      minimum: 1,
      maximum: 10_000,
      default: 7,
      description: 'How many scheduled backups (`BACKUP_INTERVAL_MINUTES`) to keep in `DATA_DIR/backups`; older ones are deleted after each new one.',
    },
    MAX_QUEUED_JOBS_PER_ORGANIZATION: {
      type: 'integer',
      minimum: 1,
      maximum: 100_000,
      default: 100,
      description:
        'Queued jobs (those waiting for a retry included) one payer may have at once: an organization with a paid plan, or else all the organizations its first owner owns without one (one owner, one cap: organizations cost nothing to create). `jobs.create` and `jobs.retry` past it answer 429 `TOO_MANY_REQUESTS` with `Retry-After`, so a burst is refused at the door instead of queued for an hour. The re-indexing the service queues itself after a model change is never refused (its jobs count, though). See [jobs.md](jobs.md), Fairness.',
    },
    MAX_FREE_ORGANIZATIONS_PER_USER: {
      type: 'integer',
      minimum: 1,
      maximum: 100_000,
      default: 3,
      description:
        'While billing is configured: the organizations one user may own on the free plan (those they own first without a live subscription). `auth.organization.create` past it answers 403 `LIMIT_REACHED` with kind `organizations`. Their AI credits are one allowance and their jobs one place in the queue anyway; this keeps one user from holding many free organizations at all. See [jobs.md](jobs.md), Fairness.',
    },
    STRIPE_SECRET_KEY: {
      type: 'string',
      description: 'With `STRIPE_WEBHOOK_SECRET` (both or neither), turns Stripe billing on. Without them billing is off: no plan, and no plan limit is enforced. See [billing.md](billing.md).',
    },
    STRIPE_WEBHOOK_SECRET: { type: 'string', description: 'Verifies the signature of `/api/auth/stripe/webhook` deliveries (with `STRIPE_SECRET_KEY`).' },
    STRIPE_API_URL: {
      type: 'string',
      format: 'http-url',
      'x-default': '`https://api.stripe.com`',
      'x-read-when': STRIPE,
      description: "Stripe's API base (a local stand-in in tests).",
    },
    STRIPE_PRICE_PRO_MONTH: { type: 'string', description: 'The Stripe price id of the pro plan, monthly; a plan and interval without one cannot be bought (admin.system.status lists it as unpriced).' },
    STRIPE_PRICE_PRO_YEAR: { type: 'string', description: 'The Stripe price id of the pro plan, yearly.' },
    STRIPE_PRICE_TEAM_MONTH: { type: 'string', description: 'The Stripe price id of the team plan, monthly.' },
    STRIPE_PRICE_TEAM_YEAR: { type: 'string', description: 'The Stripe price id of the team plan, yearly.' },
    METRICS_TOKEN: {
      type: 'string',
      'x-default': 'unset (required when `NODE_ENV=production`)',
      description:
        'When set, `GET /metrics` needs `Authorization: Bearer <METRICS_TOKEN>`. In production the service refuses to start without it (a configuration error naming `METRICS_TOKEN`, exit 2), so the metrics are never open there; elsewhere, unset, `GET /metrics` is open.',
    },
    // OpenTelemetry traces (issue 41; docs/observability.md). The OTEL_* variables are the standard
    // ones, read by the Node SDK itself (src/telemetry/tracing.ts); listed here so they are
    // documented, and taken as text so the SDK's own reading (and its warnings) decide.
    TRACE_TRUST_INCOMING: {
      type: 'boolean',
      default: false,
      description:
        "Continue the trace of a request's `traceparent` and `tracestate` headers (W3C Trace Context). `false`: a client's trace context is not trusted; each request starts a new trace, and the client's span, when valid, is kept as a link. Set it only when every client is yours (another service of the deployment), since a trusted caller chooses the trace id and the sampling decision.",
    },
    OTEL_SDK_DISABLED: {
      type: 'string',
      'x-default': '`false`',
      description: '`true` turns tracing off whatever else is set: the OpenTelemetry SDK is not loaded.',
    },
    OTEL_TRACES_EXPORTER: {
      type: 'string',
      'x-default': 'unset (`otlp` when an OTLP endpoint is set, else tracing is off)',
      description:
        'Where spans go: `otlp`, `console`, or `none`; a comma-separated list for several. Tracing (and with it the OpenTelemetry SDK, and the `traceresponse` response header) is on only when this names an exporter other than `none` or an OTLP endpoint is set; otherwise nothing of the SDK is loaded.',
    },
    OTEL_EXPORTER_OTLP_ENDPOINT: {
      type: 'string',
      'x-default': 'unset (the SDK then sends to `http://localhost:4318` when `OTEL_TRACES_EXPORTER=otlp`)',
      description: "Base URL of the OTLP/HTTP receiver (an OpenTelemetry Collector, or a backend's OTLP endpoint); spans go to `<endpoint>/v1/traces`. Setting it turns tracing on.",
    },
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: {
      type: 'string',
      'x-default': 'unset (`OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`)',
      description: 'Full URL spans are sent to, taken as it is (no path is appended). Setting it turns tracing on.',
    },
    OTEL_EXPORTER_OTLP_PROTOCOL: {
      type: 'string',
      'x-default': '`http/protobuf`',
      description: 'The OTLP encoding: `http/protobuf`, `http/json` or `grpc`. `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` sets it for traces alone.',
    },
    OTEL_EXPORTER_OTLP_HEADERS: {
      type: 'string',
      description:
        "Headers sent with every export, as `key=value` pairs separated by commas (for instance a backend's API key). The processes `serve` starts (the job worker, the AI service) get them too, so that each exports its own spans.",
    },
    OTEL_EXPORTER_OTLP_TIMEOUT: {
      type: 'string',
      'x-default': '`10000`',
      description: 'Milliseconds an export may take before it is given up.',
    },
    OTEL_SERVICE_NAME: {
      type: 'string',
      'x-default': "the process's role: `workspace-api` (`serve`, `api`), `workspace-api-worker`, `workspace-api-ai`",
      description: "The `service.name` of this process's spans. The processes `serve` starts get this name with their role appended (`<name>-worker`, `<name>-ai`), so each remains a service of its own.",
    },
    OTEL_RESOURCE_ATTRIBUTES: {
      type: 'string',
      description: 'More resource attributes of every span, as `key=value` pairs separated by commas (`deployment.environment.name=production,service.namespace=acme`).',
    },
    OTEL_TRACES_SAMPLER: {
      type: 'string',
      'x-default': '`parentbased_always_on`',
      description:
        "Which traces are kept: `always_on`, `always_off`, `traceidratio`, `parentbased_always_on`, `parentbased_always_off` or `parentbased_traceidratio` (the `parentbased_` ones follow the decision of the parent span: a trusted caller's, see `TRACE_TRUST_INCOMING`, or the calling process's).",
    },
    OTEL_TRACES_SAMPLER_ARG: {
      type: 'string',
      'x-default': '`1`',
      description: 'The ratio of the `traceidratio` samplers, from 0 to 1.',
    },
    OTEL_PROPAGATORS: {
      type: 'string',
      'x-default': '`tracecontext,baggage`',
      description: 'The propagators that read incoming trace headers (when `TRACE_TRUST_INCOMING` is on) and write outgoing ones: `tracecontext`, `baggage`, `b3`, `b3multi`, or `none`.',
    },
    OTEL_BSP_SCHEDULE_DELAY: {
      type: 'string',
      'x-default': '`5000`',
      description: 'Milliseconds between two exports of the spans buffered (the batch span processor). At shutdown what remains is exported after the service has stopped.',
    },
    OTEL_BSP_MAX_QUEUE_SIZE: {
      type: 'string',
      'x-default': '`2048`',
      description: 'Spans buffered at most; past it, new spans are dropped rather than held in memory.',
    },
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE: {
      type: 'string',
      'x-default': '`512`',
      description: 'Spans sent in one export at most.',
    },
    OTEL_BSP_EXPORT_TIMEOUT: {
      type: 'string',
      'x-default': '`30000`',
      description: 'Milliseconds an export of the batch span processor may take.',
    },
    OTEL_LOG_LEVEL: {
      type: 'string',
      'x-default': 'unset (the SDK says nothing)',
      description: "The OpenTelemetry SDK's own diagnostics on stderr: `none`, `error`, `warn`, `info`, `debug`, `verbose` or `all` (an exporter that cannot reach its receiver shows up at `warn`).",
    },
  },
} as const satisfies { type: 'object'; additionalProperties: false; properties: Record<string, SettingSchema> };

type Properties = typeof configSchema.properties;
export type SettingName = keyof Properties;

/** What a setting's schema says its value is, once validated. */
type ValueOf<P> = P extends { type: 'integer' } ? number : P extends { type: 'boolean' } ? boolean : P extends { type: 'array' } ? string[] : P extends { enum: readonly (infer E)[] } ? E : string;

/** The validated environment: a setting with a default is always there, the others may be unset. */
export type Settings = { -readonly [K in SettingName as Properties[K] extends { default: unknown } ? K : never]: ValueOf<Properties[K]> } & {
  -readonly [K in SettingName as Properties[K] extends { default: unknown } ? never : K]?: ValueOf<Properties[K]>;
};

/** Every variable the service reads, in the order of the schema (and of docs/configuration.md). */
export const settingNames = Object.keys(configSchema.properties) as readonly SettingName[];

export function settingSchema(name: SettingName): SettingSchema {
  return configSchema.properties[name];
}
