/**
 * `serve` runs the companion AI service as a child process (`main.ts ai`, supervised by
 * process/supervised-child.ts), so nothing a document or the model does can stop, slow or fill the
 * memory of the API's process and event loop. The child gets AI_API_KEY (a fresh one when none is
 * configured) and reports its address once it listens. A child that dies is started again on the
 * same port; the API meanwhile sees a refused connection, which its client treats as a transient
 * failure (jobs retry with backoff).
 *
 * The child parses untrusted files, so it gets only what it reads (aiChildEnvironment): its own
 * settings and what Node needs, never the API's secrets (DATABASE_URL, SECRET, Stripe, S3, ...),
 * and the OTEL_* variables that make it export its spans where the API does.
 */
import type { AiSettings } from '../config.ts';
import { configSchema } from '../config/schema.ts';
import type { Logger } from '../logger.ts';
import { startSupervisedChild } from '../process/supervised-child.ts';
import { childTracingEnvironment } from '../telemetry/tracing.ts';
import { generateApiKey } from './api-key.ts';

export interface AiChild {
  url: string;
  /** The key the child demands; the API's client sends it. */
  apiKey: string;
  /** The running child's pid (changes with a restart). */
  pid(): number | undefined;
  /** SIGTERM to the child, then waits for it to exit (SIGKILL after `timeoutMs`). */
  close(timeoutMs?: number): Promise<void>;
}

export async function startAiChild(settings: AiSettings, logger: Logger): Promise<AiChild> {
  const apiKey = settings.apiKey ?? generateApiKey();
  let port = settings.port;
  const child = await startSupervisedChild({
    command: 'ai',
    name: 'AI service',
    logger,
    // Its OTEL_* variables too: it exports its own spans, as a service of its own (issue 41).
    env: () => aiChildEnvironment(process.env, { ...childTracingEnvironment(process.env, 'ai'), AI_API_KEY: apiKey, AI_PORT: String(port), AI_HOST: settings.host }),
    // AI_PORT=0 took a free port: a restart takes the same one, so AI_URL stays true.
    onReady: (ready) => {
      if (ready.port) port = ready.port;
    },
  });
  return { url: child.ready.url!, apiKey, pid: () => child.pid(), close: (timeoutMs) => child.close(timeoutMs) };
}

/**
 * The settings the `ai` command reads, from the schema: the AI service's own (config.ts
 * aiSettings; test/process/ai-child-environment.test.ts fails when it reads one not matched here)
 * and the log level.
 */
const AI_SETTING = /^(AI_|EMBEDDING_|OPENAI_|EXTRACT_|OCR_)|^(MAX_EXTRACTED_CHARACTERS|MAX_UPLOAD_BYTES|LOG_LEVEL)$/;
export const AI_CHILD_SETTINGS: readonly string[] = Object.keys(configSchema.properties).filter((name) => AI_SETTING.test(name));

/**
 * What Node and the libraries under it read: the search path, home and temporary directories,
 * locale and time zone, Node's own options, CA certificates and proxies (for EMBEDDING_PROVIDER=openai).
 * NODE_ENV is not passed: nothing in the AI service depends on it, and in production the
 * configuration would then demand the API's secrets (SECRET, METRICS_TOKEN) of the child.
 */
const PROCESS_VARIABLES = [
  'PATH',
  'HOME',
  'USER',
  'TMPDIR',
  'TMP',
  'TEMP',
  'LANG',
  'LANGUAGE',
  'LC_ALL',
  'LC_CTYPE',
  'TZ',
  'NODE_OPTIONS',
  'NODE_EXTRA_CA_CERTS',
  'NODE_USE_ENV_PROXY',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'UV_THREADPOOL_SIZE',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
];

/** The child's environment: the allowed variables of `parent` that are set, then `own` (its key and address). */
export function aiChildEnvironment(parent: NodeJS.ProcessEnv, own: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const name of [...PROCESS_VARIABLES, ...AI_CHILD_SETTINGS]) {
    if (parent[name] !== undefined) env[name] = parent[name];
  }
  return { ...env, ...own };
}
