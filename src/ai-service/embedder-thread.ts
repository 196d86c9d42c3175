/**
 * The worker thread that runs the sentence embedder (embedder.ts starts it): inference blocks
 * whichever thread calls it, so it runs here and the AI service's event loop stays free.
 *
 * It checks every model file's pinned SHA-256 (about 0.1 s) and loads the model, then says
 * `ready` or `failed`; after that it embeds one job at a time, in arrival order. It must not be
 * stopped with `worker.terminate()` while onnxruntime is inside a native call (loading or
 * running): that aborts the whole process ("terminate called after throwing an instance of
 * 'Napi::Error'"). So it is asked to `stop` and leaves once its current work is done.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { lowerThreadPriority } from './thread-priority.ts';
import { mismatchedModelFiles } from './model-files.ts';
import { loadSentenceEmbedder, type SentenceEmbedder } from './sentence-embedder.ts';

export interface ThreadSetup {
  dir: string;
  threads: number;
  batchSize: number;
  /** AI_THREAD_NICE: taken before onnxruntime starts its threads, which inherit it. */
  nice: number;
}

/** To the thread. `crash` is for tests: the thread dies of an uncaught error at its next turn. */
export type ThreadRequest = { type: 'embed'; texts: string[] } | { type: 'stop' } | { type: 'crash' };

/** From the thread. `vectors` is every vector one after the other, EMBEDDING_DIMENSIONS each. */
export type ThreadMessage = { type: 'ready' } | { type: 'failed'; message: string } | { type: 'done'; vectors: Float32Array; tokens: number } | { type: 'error'; message: string };

const port = parentPort!;
const setup = workerData as ThreadSetup;
const post = (message: ThreadMessage, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer);

lowerThreadPriority(setup.nice);

const load = async (): Promise<SentenceEmbedder> => {
  const wrong = await mismatchedModelFiles(setup.dir);
  if (wrong.length > 0) throw new Error(`${wrong.map((file) => file.path).join(', ')} in ${setup.dir} do not match their pinned SHA-256`);
  return loadSentenceEmbedder(setup.dir, { threads: setup.threads, batchSize: setup.batchSize });
};

const loaded = load();
/** Every job and the stop run after the load and after each other. */
let queue: Promise<unknown> = loaded.then(
  () => post({ type: 'ready' }),
  (error: unknown) => {
    post({ type: 'failed', message: (error as Error).message });
    port.close();
  },
);

port.on('message', (request: ThreadRequest) => {
  if (request.type === 'crash') {
    setImmediate(() => {
      throw new Error('embedding thread crash requested');
    });
    return;
  }
  queue = queue.then(async () => {
    const embedder = await loaded.catch(() => null);
    if (request.type === 'stop') {
      await embedder?.close();
      port.close();
      return;
    }
    try {
      const { vectors, tokens } = await embedder!.embed(request.texts);
      const flat = new Float32Array(vectors.reduce((size, vector) => size + vector.length, 0));
      vectors.reduce((offset, vector) => (flat.set(vector, offset), offset + vector.length), 0);
      post({ type: 'done', vectors: flat, tokens }, [flat.buffer]);
    } catch (error) {
      post({ type: 'error', message: (error as Error).message });
    }
  });
});
