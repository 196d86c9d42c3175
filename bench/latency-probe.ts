/**
 * Open-loop latency probe, run as a child process so that its timing does not share the server's
 * event loop. Every `intervalMs` it sends one GET to each target, whether or not the previous ones
 * have been answered (a stalled server is not given time to catch up, so a stall shows in the
 * figures instead of being skipped: no coordinated omission), over keep-alive connections, and
 * records each answer's latency from the moment the request was due (a target's `offsetMs` after
 * the tick). Forked with an IPC channel:
 * `start` begins a window, `stop` (or `maxMs`) ends it and waits for the requests in flight; the
 * answer is one ProbeResult.
 */
import { Agent, get } from 'node:http';

export interface ProbeTarget {
  name: string;
  url: string;
  headers?: Record<string, string>;
  /**
   * How long after each tick this target's request is due (default 0: all targets at once). Spread
   * over the interval, each request is measured on its own instead of partly queued behind
   * another target's.
   */
  offsetMs?: number;
}

export type ProbeMessage = { type: 'start'; targets: ProbeTarget[]; intervalMs: number; maxMs: number } | { type: 'stop' };

export interface ProbeResult {
  /** Milliseconds per target name, answers with status 200 only. */
  latencies: Record<string, number[]>;
  /** The same answers' due times, ms since the window started (same order as `latencies`). */
  due: Record<string, number[]>;
  /**
   * The same answers' latencies from the moment each request was sent: without the probe's own
   * lateness (its timer fires up to a millisecond or so after the due time, by about the same
   * amount for a whole window), which a comparison of small latencies must leave out.
   */
  fromSent: Record<string, number[]>;
  errors: number;
  seconds: number;
}

function probe(targets: ProbeTarget[], intervalMs: number, maxMs: number) {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const latencies: Record<string, number[]> = Object.fromEntries(targets.map((target) => [target.name, []]));
  const dueTimes: Record<string, number[]> = Object.fromEntries(targets.map((target) => [target.name, []]));
  const fromSent: Record<string, number[]> = Object.fromEntries(targets.map((target) => [target.name, []]));
  let errors = 0;
  const inFlight = new Set<Promise<void>>();
  const started = performance.now();
  let sent = 0;
  const send = (target: ProbeTarget, due: number) => {
    const request = new Promise<void>((resolve) => {
      const sentAt = performance.now();
      get(target.url, { agent, headers: target.headers ?? {} }, (res) => {
        res
          .on('end', () => {
            if (res.statusCode === 200) {
              latencies[target.name]!.push(performance.now() - due);
              dueTimes[target.name]!.push(due - started);
              fromSent[target.name]!.push(performance.now() - sentAt);
            } else errors++;
            resolve();
          })
          .on('error', () => {
            errors++;
            resolve();
          })
          .resume();
      }).on('error', () => {
        errors++;
        resolve();
      });
    });
    inFlight.add(request);
    void request.then(() => inFlight.delete(request));
  };
  // Each request goes out when it is due (a timer set for that moment; one that fires late sends
  // everything due by then), and its latency counts from when it was due.
  let timer: NodeJS.Timeout;
  // With offsets, a tick's targets go out in the order of their offsets, each at its own moment.
  const ordered = targets.map((target) => ({ target, offset: target.offsetMs ?? 0 })).sort((a, b) => a.offset - b.offset);
  let next = 0;
  const dueOf = (k: number, j: number) => started + k * intervalMs + ordered[j]!.offset;
  const tick = () => {
    const now = performance.now();
    while (dueOf(sent, next) <= now) {
      send(ordered[next]!.target, dueOf(sent, next));
      if (++next === ordered.length) {
        next = 0;
        sent++;
      }
    }
    timer = setTimeout(tick, Math.max(0, dueOf(sent, next) - performance.now()));
  };
  tick();
  let stopped!: () => void;
  const ended = new Promise<void>((resolve) => (stopped = resolve));
  const limit = setTimeout(() => stopped(), maxMs);
  return {
    stop: () => stopped(),
    async result(): Promise<ProbeResult> {
      await ended;
      clearTimeout(timer);
      clearTimeout(limit);
      const seconds = (performance.now() - started) / 1000;
      await Promise.all(inFlight);
      agent.destroy();
      return { latencies, due: dueTimes, fromSent, errors, seconds };
    },
  };
}

if (import.meta.main && process.send) {
  const send = process.send.bind(process);
  let running: ReturnType<typeof probe> | undefined;
  process.on('message', (message: ProbeMessage) => {
    if (message.type === 'start') {
      const current = (running = probe(message.targets, message.intervalMs, message.maxMs));
      void current.result().then((result) => send(result));
    } else running?.stop();
  });
}
