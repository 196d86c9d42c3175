/**
 * The embedder the AI service answers `/v1/embeddings` with: the local sentence-embedding model
 * (sentence-embedder.ts) in a worker thread of this process, or an OpenAI-compatible provider
 * (openai-embedder.ts), as EMBEDDING_PROVIDER says.
 *
 * The local one runs the model in worker threads, each with its own copy of the model (it loads
 * in 0.1-0.4 s):
 * - the documents' threads, EMBEDDING_THREADS of them at AI_THREAD_NICE, each with one
 *   onnxruntime thread: requests wait in a fair line (fair-queue.ts) and go in batches of up to
 *   EMBEDDING_BATCH_SIZE texts that gather several requests, of several organizations
 *   (embedding-batches.ts), to whichever thread is free: each organization waiting gets an equal
 *   share of a batch, the one served least recently first, and its requests share its part in
 *   arrival order. Copies rather than one inference on several onnxruntime threads: those wait for
 *   each other at every node of the graph, spinning, whenever the API's threads take a core from
 *   one of them (on two cores shared with the API, copies embedded 1.4-1.5 times as much, and 1.1
 *   times on idle cores: docs/benchmarks.md). They start with the first document's request (the
 *   load, 0.1-0.4 s and about 1.4 s of CPU a copy, would otherwise take a core from the service's
 *   own start: `serve` opens its database meanwhile, issue 39);
 * - the queries' thread, one onnxruntime thread at the API's priority, started by the first
 *   query (a service that never searches never holds its copy): requests of a few texts
 *   (QUERY_TEXTS: a search's query) wait in a line of their own and never behind a document's
 *   batch; a batch of this line holds one request. A search waits for the CPU like any other
 *   request, so the documents' thread can be niced to give the API's requests the cores without
 *   making searches wait for indexing (the soak saw a query pass its 10 s deadline when one niced
 *   thread embedded both).
 * Past EMBEDDINGS_QUEUE_BOUNDS waiting requests a new one is refused with 503 and Retry-After; a
 * request whose caller went away stops being batched (a batch already sent with some of its texts
 * still answers the others in it). A thread that dies fails every request with texts in the batch
 * it was working on (502) and is replaced; the service lives on. Missing model files or a model that
 * fails to load make `problem()` say so and embed() answer 503, until the files are there (checked
 * again on each call) or, after a load failure, RETRY_MS have passed.
 *
 * Traces (spans.ts): a request's wait in its line, until its first batch, is its `ai.queue.wait`;
 * each batch its texts go through is an `ai.embed.batch` span under its request's span, linked to
 * the spans of the other requests in that batch.
 */
import { Worker } from 'node:worker_threads';
import type { AiSettings } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { ThreadMessage, ThreadRequest, ThreadSetup } from './embedder-thread.ts';
import { nextBatch, shareTokens, type BatchPart } from './embedding-batches.ts';
import { createFairLine, NO_ORGANIZATION, type QueueStats } from './fair-queue.ts';
import { CALLER_GONE, HttpError } from './http-exchange.ts';
import { DEFAULT_MODEL_DIR, missingModelFiles } from './model-files.ts';
import { createOpenAiEmbedder } from './openai-embedder.ts';
import { EMBEDDING_DIMENSIONS, LOCAL_EMBEDDING_MODEL, type EmbeddingsResult } from './protocol.ts';
import type { Embedder } from './embedder-interface.ts';
import { currentTrace, endBatchSpans, endQueueWait, startBatchSpans, startQueueWait, type WaitOutcome } from './spans.ts';
import { tracingOn, type Span } from '../telemetry/tracing.ts';
import type { Context } from '@opentelemetry/api';

export interface EmbedderOptions {
  /** The local model's folder; default DEFAULT_MODEL_DIR (model-files.ts). */
  modelDir?: string;
}

/** How the local model runs: settings.embedding and settings.threadNice (config.ts). */
export interface LocalModelSetup {
  /** onnxruntime threads per inference call. */
  threads: number;
  /**
   * Worker threads of the lane, each with its own copy of the model; a batch goes to whichever is
   * free. Default 1. The service runs EMBEDDING_THREADS copies of one onnxruntime thread each
   * (createEmbedder): on cores shared with the API, one inference's threads wait for each other at
   * every node of the graph whenever the API takes a core from one of them, and copies do not.
   */
  copies?: number;
  /** Texts per inference call (EMBEDDING_BATCH_SIZE): the most a batch holds, shared among the organizations waiting. */
  batchSize: number;
  /** The embedding thread's niceness (AI_THREAD_NICE; thread-priority.ts). */
  nice: number;
}

/** After a failed load, embed() answers 503 at once for this long before trying again. */
const RETRY_MS = 10_000;

export function createEmbedder(settings: AiSettings, logger: Logger, options: EmbedderOptions = {}): QueuedEmbedder {
  // A provider has queues of its own (and its own 429s, passed on as 503s).
  if (settings.provider === 'openai') return { ...bindEmbedder(createOpenAiEmbedder(settings.openai, logger)), stats: () => null };
  const setup = { threads: 1, copies: settings.embedding.threads, batchSize: settings.embedding.batchSize, nice: settings.threadNice };
  return createLocalEmbedder(options.modelDir ?? DEFAULT_MODEL_DIR, setup, logger.child({ component: 'embedder' }));
}

/** Who asks, for the turns: the organization (X-Organization-Id) and whether the caller is still there. */
export interface EmbedCall {
  organization?: string | undefined;
  /**
   * X-Embedding-Purpose: a search's query goes to the queries' line, a document's chunks to the
   * documents' (batched with other requests), however many texts. Absent (an older caller): a
   * request of at most QUERY_TEXTS texts is taken for a query.
   */
  purpose?: 'query' | 'document' | undefined;
  /** Aborts when the caller goes away: its texts stop being sent to the model. */
  signal?: AbortSignal | undefined;
}

/** An embedder that takes turns (the local one); a provider's embed() ignores the call. */
export interface QueuedEmbedder extends Embedder {
  embed(texts: string[], call?: EmbedCall): Promise<EmbeddingsResult>;
  /**
   * The local model's queues; `running` counts its threads (queries', documents') with a batch in
   * hand, `waiting` the requests none of whose texts is in a batch in hand. Null for a provider.
   */
  stats(): EmbedderStats | null;
}

export interface EmbedderStats extends QueueStats {
  /** Batches sent to the model's threads so far, both lanes. */
  batches: number;
  /** Texts in them: texts / batches says how full the batches are. */
  texts: number;
}

/** What a batch holds, for tests and benchmarks (createLocalEmbedder's `watch`). */
export interface BatchSent {
  /** The thread's name: `embedder` (documents) or `embedder-queries`. */
  thread: string;
  /** Each request's texts in it, in the order they were taken. */
  parts: { organization: string; texts: string[] }[];
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

/** The threads of the model (LocalModelSetup.copies) and the line of requests they serve. */
interface Lane {
  /** Its threads' name (`embedder`, `embedder-queries`), as /proc and the logs show it. */
  name: string;
  model: LocalModelSetup;
  line: Line;
  /** Whether a batch gathers several requests (documents) or holds one (queries). */
  mixes: boolean;
  /** Started with the lane's first request; a thread that dies is replaced. */
  threads: Thread[];
  /** Texts in the line not yet in a batch (what `pump` shares among idle threads). */
  waitingTexts: number;
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
  /** Vectors received: it is answered once it has them all (its batches may come back in any order, from several threads). */
  received: number;
  tokens: number;
  /** Its caller went away or it failed: it has left its line, and a batch in flight with its texts does not answer it. */
  cancelled: boolean;
  /** The request's span context, for its batches' spans, and its wait for the first batch (spans.ts); undefined while tracing is off. */
  trace: Context | undefined;
  wait: Span | undefined;
  resolve(result: EmbeddingsResult): void;
  reject(error: Error): void;
}

interface Thread {
  worker: Worker;
  ready: boolean;
  /** The batch the thread is working on: each request's text indexes in it. */
  current: BatchPart<Request>[] | null;
  /** The current batch's spans, one per part (spans.ts); empty while tracing is off. */
  spans: Span[];
}

/** The health report is public: the cause goes to the log, not here. */
const LOAD_FAILED = 'The embedding model failed to load (the AI service log says why); it is tried again on a request 10 s later.';

/** A stopping thread that has not left by then is terminated anyway (a batch takes about a second). */
const STOP_TIMEOUT_MS = 10_000;

/** `watch` hears of every batch as it is sent (tests, benchmarks). */
export function createLocalEmbedder(dir: string, model: LocalModelSetup, logger: Logger, watch?: (batch: BatchSent) => void): LocalEmbedder {
  /** Requests with texts left to send, in turns; one whose last texts are in a batch has left its line. */
  const queries: Lane = { name: 'embedder-queries', model: QUERY_MODEL, line: createFairLine<Request>((request) => request.organization), mixes: false, threads: [], waitingTexts: 0 };
  const documents: Lane = { name: 'embedder', model, line: createFairLine<Request>((request) => request.organization), mixes: true, threads: [], waitingTexts: 0 };
  const lanes = [queries, documents];
  const clearLines = () =>
    lanes.flatMap((lane) => {
      lane.waitingTexts = 0;
      return lane.line.clear();
    });
  /**
   * Requests in a line none of whose texts is in the batch in hand. One with texts in it and
   * texts left is back in its line already, but it is being worked on: it counts as running, as it
   * did when a batch held one request, for the stats and for EMBEDDINGS_QUEUE_BOUNDS.
   */
  const waitingCount = (organization?: string) =>
    lanes.reduce((sum, lane) => {
      const inHand = new Set(
        lane.threads
          .flatMap((thread) => thread.current ?? [])
          .filter((part) => !part.last && !part.request.cancelled && (organization === undefined || part.request.organization === organization))
          .map((part) => part.request),
      );
      return sum + lane.line.size(organization) - inHand.size;
    }, 0);
  /** The lane's threads with a batch in hand. */
  const busy = (lane: Lane) => lane.threads.filter((thread) => thread.current).length;
  /** The same, both lanes. */
  const running = () => lanes.reduce((sum, lane) => sum + busy(lane), 0);
  let dropped = 0;
  let refused = 0;
  let batches = 0;
  let batchedTexts = 0;
  let failure: { message: string; at: number } | null = null;
  let closed = false;

  /** Ends a request's wait in its line, once: its first batch was sent, or it left the line without one. */
  const waited = (request: Request, outcome: WaitOutcome) => {
    endQueueWait(request.wait, outcome);
    request.wait = undefined;
  };

  const unavailable = (message: string, cause?: unknown) => new HttpError(503, message, { cause });

  /** A load that failed fails every waiting request, in both lanes: they run the same model files. */
  const loadFailed = (lane: Lane, problem: object) => {
    failure = { message: LOAD_FAILED, at: Date.now() };
    logger.error({ dir, thread: lane.name, ...problem }, 'embedding model failed to load');
    for (const request of clearLines()) {
      waited(request, 'cancelled');
      request.reject(unavailable(failure.message));
    }
  };

  const own = (lane: Lane, thread: Thread) => lane.threads.includes(thread);
  const leave = (lane: Lane, thread: Thread) => {
    lane.threads = lane.threads.filter((other) => other !== thread);
  };

  /** Starts the lane's threads that are missing. */
  const start = (lane: Lane) => {
    while (lane.threads.length < (lane.model.copies ?? 1)) startThread(lane);
  };

  const startThread = (lane: Lane) => {
    const setup: ThreadSetup = { dir, threads: lane.model.threads, batchSize: lane.model.batchSize, nice: lane.model.nice };
    const worker = new Worker(new URL('./embedder-thread.ts', import.meta.url), { workerData: setup, name: lane.name });
    const started = performance.now();
    const thread: Thread = { worker, ready: false, current: null, spans: [] };
    lane.threads.push(thread);
    worker.on('message', (message: ThreadMessage) => {
      if (!own(lane, thread)) return;
      if (message.type === 'ready') {
        thread.ready = true;
        failure = null;
        logger.info({ ms: Math.round(performance.now() - started), thread: lane.name, ...lane.model, dir }, 'embedding model loaded');
      } else if (message.type === 'failed') {
        // The thread leaves by itself.
        leave(lane, thread);
        loadFailed(lane, { problem: message.message });
      } else {
        const parts = thread.current!;
        thread.current = null;
        if (message.type === 'done') {
          const tokens = message.tokens;
          endBatchSpans(thread.spans, { tokens, shares: () => shareTokens(tokens, parts) });
          received(parts, message.vectors, tokens);
        } else {
          endBatchSpans(thread.spans, { error: 'The embedding model failed.' });
          failBatch(parts, () => new HttpError(502, 'The embedding model failed; try again later.', { cause: new Error(message.message) }));
        }
        thread.spans = [];
        // The requests whose last texts this batch held; the others are back in the line already.
        for (const part of parts) if (part.last) lane.line.finished(part.request.organization);
      }
      pump();
    });
    worker.on('error', (error) => logger.error({ err: error, thread: lane.name }, 'embedding thread failed'));
    worker.on('exit', (code) => {
      if (!own(lane, thread)) return;
      leave(lane, thread);
      if (!thread.ready) {
        loadFailed(lane, { code });
        return;
      }
      logger.error({ code, thread: lane.name, working: Boolean(thread.current), requests: thread.current?.length ?? 0 }, 'embedding thread stopped; starting another');
      if (thread.current) {
        // Every request with texts in the batch lost them; the others wait for the next thread.
        endBatchSpans(thread.spans, { error: 'The embedding thread stopped.' });
        failBatch(thread.current, () => new HttpError(502, 'The embedding model stopped; try again later.'));
        for (const part of thread.current) if (part.last) lane.line.finished(part.request.organization);
      }
      startThread(lane);
    });
    refresh(lane);
  };

  /** Sends each idle thread the next batch of its line (embedding-batches.ts). */
  const pump = () => {
    for (const lane of lanes) {
      const idle = lane.threads.filter((thread) => thread.ready && !thread.current);
      for (const [at, thread] of idle.entries()) {
        if (lane.line.size() === 0) break;
        // What waits is shared among the idle threads: a few texts on two copies are answered
        // sooner than on one (a job of one small document waits for them), and a full line still
        // goes batchSize at a time.
        const slots = Math.min(lane.model.batchSize, Math.ceil(lane.waitingTexts / (idle.length - at)));
        const parts = nextBatch(lane.line, Math.max(1, slots), lane.mixes);
        thread.current = parts;
        const texts = parts.flatMap((part) => part.indexes.map((index) => part.request.texts[index]!));
        lane.waitingTexts -= texts.length;
        batches += 1;
        if (tracingOn()) {
          // A request's first batch ends its wait in the line.
          for (const { request } of parts) waited(request, 'started');
          thread.spans = startBatchSpans(
            lane.name,
            batches,
            parts.map((part) => ({ trace: part.request.trace, texts: part.indexes.length })),
          );
        }
        batchedTexts += texts.length;
        const job: ThreadRequest = { type: 'embed', texts };
        thread.worker.postMessage(job);
        watch?.({ thread: lane.name, parts: parts.map((part) => ({ organization: part.request.organization, texts: part.indexes.map((index) => part.request.texts[index]!) })) });
      }
      refresh(lane);
    }
  };

  /** A thread keeps the process alive only while it has work, so a forgotten close() cannot hang it. */
  const refresh = (lane: Lane) => {
    for (const thread of lane.threads) {
      if (thread.current || lane.line.size() > 0) thread.worker.ref();
      else thread.worker.unref();
    }
  };

  /** The vectors come back in the batch's order: part by part, each part's texts in its order. */
  const received = (parts: BatchPart<Request>[], flat: Float32Array, tokens: number) => {
    const shares = shareTokens(tokens, parts);
    let position = 0;
    parts.forEach((part, at) => {
      const { request, indexes } = part;
      const first = position;
      position += indexes.length;
      // Its caller went away while this batch ran: its texts in it are thrown away, the rest was never sent.
      if (request.cancelled) return;
      indexes.forEach((index, offset) => {
        const vector = flat.subarray((first + offset) * EMBEDDING_DIMENSIONS, (first + offset + 1) * EMBEDDING_DIMENSIONS);
        // 8 decimals keep float32's precision at these magnitudes and the JSON answer short.
        request.vectors[index] = Array.from(vector, (value) => Math.round(value * 1e8) / 1e8);
      });
      request.tokens += shares[at]!;
      request.received += indexes.length;
      if (request.received === request.texts.length) request.resolve({ vectors: request.vectors, model: LOCAL_EMBEDDING_MODEL, usage: { prompt_tokens: request.tokens, total_tokens: request.tokens } });
    });
  };

  /** Takes the request out of its line for good (its texts left are never sent) and rejects it. */
  const fail = (request: Request, error: Error) => {
    if (request.cancelled) return;
    request.cancelled = true;
    waited(request, error instanceof HttpError && error.status === CALLER_GONE ? 'dropped' : 'cancelled');
    request.lane.line.remove(request);
    // Its texts not sent leave the line with it.
    request.lane.waitingTexts -= request.order.length - request.sent;
    request.reject(error);
  };

  const failBatch = (parts: BatchPart<Request>[], error: () => Error) => {
    for (const part of parts) fail(part.request, error());
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
  const stop = async (thread: Thread) => {
    const exited = new Promise<void>((resolve) => thread.worker.once('exit', () => resolve()));
    const stopRequest: ThreadRequest = { type: 'stop' };
    thread.worker.postMessage(stopRequest);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), STOP_TIMEOUT_MS);
    });
    if ((await Promise.race([exited, late])) === 'late') {
      logger.error({ ms: STOP_TIMEOUT_MS }, 'embedding thread did not stop; terminating it');
      await thread.worker.terminate();
    }
    clearTimeout(timer);
  };

  // Each thread starts with its lane's first request (embed): the documents' one is not loaded
  // during the service's start, and a service that never searches never holds the queries' copy.

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
        if (tracingOn()) endQueueWait(startQueueWait('embeddings', waitingCount(), running()), 'refused');
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
          lane: (call.purpose ?? (texts.length <= QUERY_TEXTS ? 'query' : 'document')) === 'query' ? queries : documents,
          texts,
          order,
          sent: 0,
          vectors: new Array<number[]>(texts.length),
          received: 0,
          tokens: 0,
          cancelled: false,
          trace: currentTrace(),
          wait: undefined,
          resolve,
          reject,
        };
        const signal = call.signal;
        if (signal) {
          const gone = () => {
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
        start(request.lane);
        if (tracingOn()) request.wait = startQueueWait(queueName(request.lane), waitingCount(), busy(request.lane));
        request.lane.line.push(organization, request);
        request.lane.waitingTexts += texts.length;
        pump();
      });
    },
    stats() {
      return { running: running(), waiting: waitingCount(), dropped, refused, batches, texts: batchedTexts };
    },
    crashThread() {
      const crash: ThreadRequest = { type: 'crash' };
      documents.threads[0]?.worker.postMessage(crash);
    },
    async close() {
      if (closed) return;
      closed = true;
      const threads = lanes.flatMap((lane) => lane.threads);
      for (const lane of lanes) lane.threads = [];
      const stopping = unavailable('The AI service is shutting down.');
      // A request with texts left is in its line and may have texts in a batch too: rejected once.
      const unanswered = new Set([...clearLines(), ...threads.flatMap((thread) => (thread.current ?? []).map((part) => part.request))]);
      for (const thread of threads) endBatchSpans(thread.spans, { error: stopping.message });
      for (const request of unanswered) {
        waited(request, 'cancelled');
        request.reject(stopping);
      }
      await Promise.all(threads.map((thread) => stop(thread)));
    },
  };
}

/** The lane's queue as its `ai.queue.wait` spans name it. */
function queueName(lane: Lane): string {
  return lane.mixes ? 'embeddings' : 'embeddings (queries)';
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
