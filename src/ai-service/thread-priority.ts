/**
 * The AI service's heavy threads (the embedding model's, a document's parser) give way to the API.
 * On a machine the API shares with them (`serve` on two cores), a request that arrives while the
 * model runs a batch on every core waited for the scheduler's next turn; with a higher niceness the
 * kernel runs the API's thread first and the model gets the rest (docs/ai-service.md, Priority).
 *
 * Linux keeps the niceness per thread: `setpriority(PRIO_PROCESS, 0)`, which os.setPriority(n)
 * calls, changes the calling thread only, and threads it starts afterwards (onnxruntime's pool)
 * inherit it. So each heavy thread calls this first thing, for itself. Raising one's own niceness
 * needs no privilege; where it fails (another OS, a sandbox) the thread runs as before.
 */
import { setPriority } from 'node:os';

export function lowerThreadPriority(nice: number): void {
  if (nice <= 0) return;
  try {
    setPriority(nice);
  } catch {
    // Not permitted here: the thread keeps the priority it has.
  }
}
