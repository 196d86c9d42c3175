/**
 * The embedder the AI service answers `/v1/embeddings` with: the local sentence-embedding model
 * (sentence-embedder.ts) in a worker thread of this process, or an OpenAI-compatible provider
 * (openai-embedder.ts), as EMBEDDING_PROVIDER says.
 *
 * The local one runs the model in two worker threads, each with its own copy of the model (it
 * loads in 0.1-0.4 s):
 * - the documents' thread, at EMBEDDING_THREADS and AI_THREAD_NICE: requests wait in a fair line
 *   (fair-queue.ts) and go to it EMBEDDING_BATCH_SIZE texts at a time, taking turns across
 *   organizations first (the one served least recently), then across the requests of one
 *   organization; it starts with the service, so the first document does not wait for the load;
 * - the queries' thread, one onnxruntime thread at the API's priority, started by the first
 *   query (a service that never searches never holds the second copy): requests of a few texts
 *   (QUERY_TEXTS: a search's query) wait in a line of their own and never behind a document's
 *   batch. A search waits for the CPU like any other request, so the documents' thread can be
 *   niced to give the API's requests the cores without making searches wait for indexing (the
 *   soak saw a query pass its 10 s deadline when one niced thread embedded both).
 * Past EMBEDDINGS_QUEUE_BOUNDS waiting requests a new one is refused with 503 and Retry-After; a
 * request whose caller went away stops being batched. A thread that dies fails the request it was
 * working on (502) and is replaced; the service lives on. Missing model files or a model that
 * fails to load make `problem()` say so and embed() answer 503, until the files are there (checked
 * again on each call) or, after a load failure, RETRY_MS have passed.
 */
import { Worker } from 'node:worker_threads';
import type { AiSettings } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { ThreadMessage, ThreadRequest, ThreadSetup } from './embedder-thread.ts';
import { createFairLine, NO_ORGANIZATION, type QueueStats } from './fair-queue.ts';
import { HttpError } from './http-exchange.ts';
import { DEFAULT_MODEL_DIR, missingModelFiles } from './model-files.ts';
import { createOpenAiEmbedder } from './openai-embedder.ts';
import { EMBEDDING_DIMENSIONS, LOCAL_EMBEDDING_MODEL, type EmbeddingsResult } from './protocol.ts';
import type { Embedder } from './embedder-interface.ts';

export interface EmbedderOptions {
  /** The local model's folder; default DEFAULT_MODEL_DIR (model-files.ts). */
  modelDir?: string;
}

/** How the local model runs: settings.embedding and settings.threadNice (config.ts). */
export interface LocalModelSetup {
  /** onnxruntime threads per inference call (EMBEDDING_THREADS). */
  threads: number;
  /** Texts per inference call and per turn of the queue (EMBEDDING_BATCH_SIZE). */
  batchSize: number;
  /** The embedding thread's niceness (AI_THREAD_NICE; thread-priority.ts). */
  nice: number;
}

/** After a failed load, embed() answers 503 at once for this long before trying again. */
const RETRY_MS = 10_000;

export function createEmbedder(settings: AiSettings, logger: Logger, options: EmbedderOptions = {}): QueuedEmbedder {
  // A provider has queues of its own (and its own 429s, passed on as 503s).
  if (settings.provider === 'openai') return { ...bindEmbedder(createOpenAiEmbedder(settings.openai, logger)), stats: () => null };
  const setup = { ...settings.embedding, nice: settings.threadNice };
  return createLocalEmbedder(options.modelDir ?? DEFAULT_MODEL_DIR, setup, logger.child({ component: 'embedder' }));
}

/** Who asks, for the turns: the organization (X-Organization-Id) and whether the caller is still there. */
export interface EmbedCall {
  organization?: string | undefined;
  /** Aborts when the caller goes away: its texts stop being sent to the model. */
  signal?: AbortSignal | undefined;
}

/** An embedder that takes turns (the local one); a provider's embed() ignores the call. */
export interface QueuedEmbedder extends Embedder {
  embed(texts: string[], call?: EmbedCall): Promise<EmbeddingsResult>;
  /** The local model's queues; `running` counts its threads (queries', documents') with a batch in hand. Null for a provider. */
  stats(): QueueStats | null;
}

/**
 * Waiting requests past which embeddings answers 503 with Retry-After. A batch takes about a
 * second, and a caller (the client's 60 s) would time out behind a few hundred of them: 256 in
 * all, 64 per organization (the worker sends one request per job it indexes).
 */
export const EMBEDDINGS_QUEUE_BOUNDS = { maxWaiting: 256, maxWaitingPerOrganization: 64, retryAfterSeconds: 2 };

/** The local embedder with one more method, for tests. */
export interface LocalEmbedder extends QueuedEmbedder {
  /** Makes the thread die of an uncaught error once its current batch is done, as a bug would. */
  crashThread(): void;
}

/**
 * Requests of at most this many texts (documents.search embeds one: its query) go to the queries'
 * thread, in a line of their own: a query never waits for a document's batch or for a turn behind
 * every organization that is indexing. Their turns across organizations are kept within that line.
 */
export const QUERY_TEXTS = 4;

/** The queries' thread: one onnxruntime thread (a query is one short text), at the API's priority. */
const QUERY_MODEL: LocalModelSetup = { threads: 1, batchSize: QUERY_TEXTS, nice: 0 };

type Line = ReturnType<typeof createFairLine<Request>>;

/** A thread of the model and the line of requests it serves. */
interface Lane {
  /** The thread's name (`embedder`, `embedder-queries`), as /proc and the logs show it. */
  name: string;
  model: LocalModelSetup;
  line: Line;
  thread: Thread | null;
}

interface Request {
  organization: string;
  /** The lane it waits in: queries or documents. */
  lane: Lane;
  texts: string[];
  /** Text indexes, longest first, so a batch holds texts of similar length (less padding). */
  order: number[];
  /** How much of `order` has been sent. */
  sent: number;
  vectors: number[][];
  tokens: number;
  /** Its caller went away: no more batches are sent, and the answer is not given. */
  cancelled: boolean;
  resolve(result: EmbeddingsResult): void;
  reject(error: Error): void;
}

interface Thread {
  worker: Worker;
  ready: boolean;
  /** The request and its text indexes the thread is working on. */
  current: { request: Request; indexes: number[] } | null;
}

/** The health report is public: the cause goes to the log, not here. */
const LOAD_FAILED = 'The embedding model failed to load (the AI service log says why); it is tried again on a request 10 s later.';

/** A stopping thread that has not left by then is terminated anyway (a batch takes about a second). */
const STOP_TIMEOUT_MS = 10_000;

export function createLocalEmbedder(dir: string, model: LocalModelSetup, logger: Logger): LocalEmbedder {
  /** Requests with texts left to send, in turns; the one being worked on is not in its line. */
  const queries: Lane = { name: 'embedder-queries', model: QUERY_MODEL, line: createFairLine<Request>((request) => request.organization), thread: null };
  const documents: Lane = { name: 'embedder', model, line: createFairLine<Request>((request) => request.organization), thread: null };
  const lanes = [queries, documents];
  const clearLines = () => lanes.flatMap((lane) => lane.line.clear());
  const waitingCount = (organization?: string) => queries.line.size(organization) + documents.line.size(organization);
  let dropped = 0;
  let refused = 0;
  let failure: { message: string; at: number } | null = null;
  let closed = false;

  const unavailable = (message: string, cause?: unknown) => new HttpError(503, message, { cause });

  /** A load that failed fails every waiting request, in both lanes: they run the same model files. */
  const loadFailed = (lane: Lane, problem: object) => {
    failure = { message: LOAD_FAILED, at: Date.now() };
    logger.error({ dir, thread: lane.name, ...problem }, 'embedding model failed to load');
    for (const request of clearLines()) request.reject(unavailable(failure.message));
  };

  const start = (lane: Lane) => {
    const setup: ThreadSetup = { dir, ...lane.model };
    const worker = new Worker(new URL('./embedder-thread.ts', import.meta.url), { workerData: setup, name: lane.name });
    const started = performance.now();
    const own: Thread = { worker, ready: false, current: null };
    lane.thread = own;
    worker.on('message', (message: ThreadMessage) => {
      if (lane.thread !== own) return;
      if (message.type === 'ready') {
        own.ready = true;
        failure = null;
        logger.info({ ms: Math.round(performance.now() - started), thread: lane.name, ...lane.model, dir }, 'embedding model loaded');
      } else if (message.type === 'failed') {
        // The thread leaves by itself.
        lane.thread = null;
        loadFailed(lane, { problem: message.message });
      } else {
        const { request, indexes } = own.current!;
        own.current = null;
        lane.line.finished(request.organization);
        if (message.type === 'done') received(request, indexes, message.vectors, message.tokens);
        else fail(request, new HttpError(502, 'The embedding model failed; try again later.', { cause: new Error(message.message) }));
      }
      pump();
    });
    worker.on('error', (error) => logger.error({ err: error, thread: lane.name }, 'embedding thread failed'));
    worker.on('exit', (code) => {
      if (lane.thread !== own) return;
      lane.thread = null;
      if (!own.ready) {
        loadFailed(lane, { code });
        return;
      }
      logger.error({ code, thread: lane.name, working: Boolean(own.current) }, 'embedding thread stopped; starting another');
      if (own.current) {
        lane.line.finished(own.current.request.organization);
        fail(own.current.request, new HttpError(502, 'The embedding model stopped; try again later.'));
      }
      start(lane);
    });
    refresh(lane);
  };

  /** Sends each idle thread the next batch of the request whose turn it is in its line. */
  const pump = () => {
    for (const lane of lanes) {
      const thread = lane.thread;
      if (thread?.ready && !thread.current && lane.line.size() > 0) {
        const request = lane.line.take()!;
        const indexes = request.order.slice(request.sent, request.sent + lane.model.batchSize);
        request.sent += indexes.length;
        thread.current = { request, indexes };
        const job: ThreadRequest = { type: 'embed', texts: indexes.map((index) => request.texts[index]!) };
        thread.worker.postMessage(job);
      }
      refresh(lane);
    }
  };

  /** A thread keeps the process alive only while it has work, so a forgotten close() cannot hang it. */
  const refresh = (lane: Lane) => {
    if (!lane.thread) return;
    if (lane.thread.current || lane.line.size() > 0) lane.thread.worker.ref();
    else lane.thread.worker.unref();
  };

  const received = (request: Request, indexes: number[], flat: Float32Array, tokens: number) => {
    // Its caller went away while this batch ran: the rest is not sent.
    if (request.cancelled) return;
    indexes.forEach((index, position) => {
      const vector = flat.subarray(position * EMBEDDING_DIMENSIONS, (position + 1) * EMBEDDING_DIMENSIONS);
      // 8 decimals keep float32's precision at these magnitudes and the JSON answer short.
      request.vectors[index] = Array.from(vector, (value) => Math.round(value * 1e8) / 1e8);
    });
    request.tokens += tokens;
    if (request.sent < request.order.length) {
      // Behind its organization's other requests, and after the other organizations' turns.
      request.lane.line.push(request.organization, request);
    } else {
      request.resolve({ vectors: request.vectors, model: LOCAL_EMBEDDING_MODEL, usage: { prompt_tokens: request.tokens, total_tokens: request.tokens } });
    }
  };

  const fail = (request: Request, error: Error) => {
    request.lane.line.remove(request);
    request.reject(error);
  };

  /** Why nothing can be embedded now, or null. */
  const blocked = (): string | null => {
    if (closed) return 'The AI service is shutting down.';
    const missing = missingModelFiles(dir);
    if (missing) return missing;
    if (failure && Date.now() - failure.at < RETRY_MS) return failure.message;
    return null;
  };

  /** Asks the thread to leave after its current batch, since terminating it mid-call aborts the process. */
  const stop = async (own: Thread) => {
    const exited = new Promise<void>((resolve) => own.worker.once('exit', () => resolve()));
    const stopRequest: ThreadRequest = { type: 'stop' };
    own.worker.postMessage(stopRequest);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), STOP_TIMEOUT_MS);
    });
    if ((await Promise.race([exited, late])) === 'late') {
      logger.error({ ms: STOP_TIMEOUT_MS }, 'embedding thread did not stop; terminating it');
      await own.worker.terminate();
    }
    clearTimeout(timer);
  };

  // The documents' thread starts at once; the queries' with the first query (a service that never
  // searches never holds the second copy of the model).
  if (!missingModelFiles(dir)) start(documents);

  return {
    model: LOCAL_EMBEDDING_MODEL,
    problem() {
      if (closed) return null;
      return missingModelFiles(dir) ?? failure?.message ?? null;
    },
    embed(texts, call = {}) {
      if (texts.length === 0) return Promise.resolve({ vectors: [], model: LOCAL_EMBEDDING_MODEL, usage: { prompt_tokens: 0, total_tokens: 0 } });
      if (call.signal?.aborted) return Promise.reject(call.signal.reason);
      const problem = blocked();
      if (problem) return Promise.reject(unavailable(problem));
      const organization = call.organization ?? NO_ORGANIZATION;
      const { maxWaiting, maxWaitingPerOrganization, retryAfterSeconds } = EMBEDDINGS_QUEUE_BOUNDS;
      if (waitingCount() >= maxWaiting || waitingCount(organization) >= maxWaitingPerOrganization) {
        refused += 1;
        return Promise.reject(
          new HttpError(503, `Too many embeddings requests are waiting; try again in ${retryAfterSeconds} s.`, {
            headers: { 'retry-after': String(retryAfterSeconds) },
          }),
        );
      }
      return new Promise<EmbeddingsResult>((resolve, reject) => {
        const order = texts.map((_, index) => index).sort((a, b) => texts[b]!.length - texts[a]!.length);
        const request: Request = {
          organization,
          lane: texts.length <= QUERY_TEXTS ? queries : documents,
          texts,
          order,
          sent: 0,
          vectors: new Array<number[]>(texts.length),
          tokens: 0,
          cancelled: false,
          resolve,
          reject,
        };
        const signal = call.signal;
        if (signal) {
          const gone = () => {
            request.cancelled = true;
            dropped += 1;
            logger.info({ texts: texts.length, sent: request.sent }, 'embeddings request dropped: the caller went away');
            fail(request, signal.reason as Error);
          };
          signal.addEventListener('abort', gone, { once: true });
          const settle = () => signal.removeEventListener('abort', gone);
          request.resolve = (result) => {
            settle();
            resolve(result);
          };
          request.reject = (error) => {
            settle();
            reject(error);
          };
        }
        if (!request.lane.thread) start(request.lane);
        request.lane.line.push(organization, request);
        pump();
      });
    },
    stats() {
      const running = lanes.filter((lane) => lane.thread?.current).length;
      return { running, waiting: waitingCount(), dropped, refused };
    },
    crashThread() {
      const crash: ThreadRequest = { type: 'crash' };
      documents.thread?.worker.postMessage(crash);
    },
    async close() {
      if (closed) return;
      closed = true;
      const threads = lanes.flatMap((lane) => (lane.thread ? [lane.thread] : []));
      for (const lane of lanes) lane.thread = null;
      const stopping = unavailable('The AI service is shutting down.');
      for (const request of clearLines()) request.reject(stopping);
      for (const thread of threads) thread.current?.request.reject(stopping);
      await Promise.all(threads.map((thread) => stop(thread)));
    },
  };
}

/** A provider's embedder as a QueuedEmbedder: it takes the call and does not need it. */
function bindEmbedder(embedder: Embedder): Omit<QueuedEmbedder, 'stats'> {
  return {
    get model() {
      return embedder.model;
    },
    problem: () => embedder.problem(),
    embed: (texts) => embedder.embed(texts),
    close: () => embedder.close(),
  };
}
