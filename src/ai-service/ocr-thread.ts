/**
 * The entry of the OCR worker thread: tesseract.js's own Node worker script, run after two guards
 * that its thread lacks (ocr.ts starts it through tesseract.js's `workerPath` option).
 *
 * - Memory. Tesseract and Leptonica run in WebAssembly, whose memory V8's heap limits do not count
 *   and which no heap statistic of the thread reports. Every allocation that does not fit grows the
 *   module's WebAssembly.Memory, so growth past the cap is refused at that moment: the module's
 *   allocator gets no memory (Emscripten catches the failed grow and malloc answers NULL), the
 *   decoder fails, and the job's answer, whatever it is, is replaced by a refusal that ocr.ts
 *   recognises (OCR_MEMORY_REFUSAL); ocr.ts then terminates the thread. The cap comes from
 *   `globalThis.ocrMemoryBytes`, set by the data: URL that imports this module.
 * - Errors. tesseract.js listens for its thread's errors with `worker.onerror`, which Node's
 *   Worker ignores: an uncaught error here would be an 'error' event nobody listens to, and end
 *   the AI service. Uncaught errors are caught here instead, answered as the failure of the job
 *   in progress, and the thread exits quietly.
 */
import { createRequire } from 'node:module';
import { parentPort } from 'node:worker_threads';
import { OCR_MEMORY_REFUSAL } from './ocr-memory.ts';

interface Packet {
  workerId?: unknown;
  jobId?: unknown;
  action?: unknown;
  status?: unknown;
  data?: unknown;
}

const port = parentPort;
if (!port) throw new Error("ocr-thread.ts runs as tesseract.js's worker thread");
const cap = (globalThis as { ocrMemoryBytes?: number }).ocrMemoryBytes ?? Number.POSITIVE_INFINITY;

/** The part of WebAssembly.Memory used here (the project's TypeScript libraries do not declare WebAssembly). */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(delta: number): number;
}
const memoryPrototype = (globalThis as unknown as { WebAssembly: { Memory: { prototype: WasmMemory } } }).WebAssembly.Memory.prototype;

let refused: string | null = null;
const grow = memoryPrototype.grow;
memoryPrototype.grow = function (this: WasmMemory, delta: number): number {
  const wanted = this.buffer.byteLength + delta * 65_536;
  if (wanted > cap) {
    refused ??= `the OCR thread asked for ${Math.ceil(wanted / 1024 ** 2)} MiB of WebAssembly memory`;
    throw new RangeError(refused);
  }
  return grow.call(this, delta);
};

const post = port.postMessage.bind(port);
let current: Packet | null = null;
port.on('message', (packet: Packet) => {
  current = packet;
});
port.postMessage = (packet: Packet) => {
  // Whatever the job answers once memory was refused (an error, or text read from half an image), it answers the refusal.
  if (refused !== null && packet && typeof packet === 'object' && 'jobId' in packet) post({ ...packet, status: 'reject', data: `${OCR_MEMORY_REFUSAL}${refused}` });
  else post(packet);
};

const failCurrentJob = (error: unknown) => {
  if (current) post({ workerId: current.workerId, jobId: current.jobId, action: current.action, status: 'reject', data: `the OCR thread failed: ${String(error)}` });
  // Exiting is not an 'error' event: the Worker's owner sees only 'exit'.
  process.exit(1);
};
process.on('uncaughtException', failCurrentJob);
process.on('unhandledRejection', failCurrentJob);

createRequire(import.meta.url)('tesseract.js/src/worker-script/node/index.js');
