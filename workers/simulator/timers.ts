// Every delayed action of the simulator (disbursement settlement, auto-pay, callback retries,
// injected latency, held "timeout" sockets) goes through one registry, so stopping the
// simulator cancels them all and nothing keeps the process alive or fires after a test ends.

export interface Timers {
  /** Runs fn after ms unless stopped first; returns a cancel function. */
  after(ms: number, fn: () => void): () => void;
  /** Resolves after ms; never resolves once stopped (the awaiting work is abandoned). */
  sleep(ms: number): Promise<void>;
  stop(): void;
}

export function createTimers(): Timers {
  const pending = new Set<NodeJS.Timeout>();
  let stopped = false;
  const after = (ms: number, fn: () => void) => {
    if (stopped) return () => {};
    const timer = setTimeout(() => {
      pending.delete(timer);
      fn();
    }, ms);
    pending.add(timer);
    return () => {
      clearTimeout(timer);
      pending.delete(timer);
    };
  };
  return {
    after,
    sleep: (ms) => new Promise<void>((resolve) => void after(ms, resolve)),
    stop() {
      stopped = true;
      for (const timer of pending) clearTimeout(timer);
      pending.clear();
    },
  };
}
