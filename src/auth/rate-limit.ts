/**
 * Fixed-window request limiter kept in process memory, as the specification sizes it: for one API
 * instance. Used for the shared per-IP limiter on /rpc/* and /api/v1/* and for the smaller
 * per-route limiters (contact form, identity routes, sign-in per email).
 */
export interface RateLimiter {
  /** Counts one hit for key; answers whether it is allowed and, if not, seconds until the window resets. */
  hit(key: string): { allowed: true } | { allowed: false; retryAfterSeconds: number };
}

export function createRateLimiter(options: { limit: number; windowMs: number; now?: () => number }): RateLimiter {
  const now = options.now ?? Date.now;
  const windows = new Map<string, { start: number; count: number }>();
  let lastSweep = now();
  return {
    hit(key) {
      const time = now();
      // Drop finished windows now and then so memory stays bounded by the active clients.
      if (time - lastSweep > options.windowMs) {
        for (const [k, w] of windows) if (time - w.start >= options.windowMs) windows.delete(k);
        lastSweep = time;
      }
      let window = windows.get(key);
      if (!window || time - window.start >= options.windowMs) {
        window = { start: time, count: 0 };
        windows.set(key, window);
      }
      window.count += 1;
      if (window.count <= options.limit) return { allowed: true };
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((window.start + options.windowMs - time) / 1000)) };
    },
  };
}
