/**
 * What the OCR thread (ocr-thread.ts) and the engine (ocr.ts) agree on about its memory cap: kept
 * apart so the thread does not load the engine's module.
 */

/** Starts the failure a job answers when its thread's WebAssembly memory would pass the cap. */
export const OCR_MEMORY_REFUSAL = 'OCR memory limit: ';

/** The data: URL module that sets the cap and then runs the thread, for tesseract.js's `workerPath`. */
export function ocrThreadUrl(memoryBytes: number): URL {
  const entry = new URL('./ocr-thread.ts', import.meta.url).href;
  return new URL(`data:text/javascript,globalThis.ocrMemoryBytes=${Math.floor(memoryBytes)};await import(${encodeURIComponent(JSON.stringify(entry))});`);
}
