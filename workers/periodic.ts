// A periodic pass for the scheduler's sweeps: runs at once, then `intervalMs` after each pass
// ends, so passes never overlap; a pass that throws is logged and simply runs again next time.
// stop() waits for a pass in progress, so a SIGTERM never cuts one off mid-statement.
import { logger } from '../db/logger.ts';

export interface Periodic {
  stop(): Promise<void>;
}

export function every(name: string, intervalMs: number, pass: (stopped: () => boolean) => Promise<void>): Periodic {
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> = Promise.resolve();

  const run = async () => {
    try {
      await pass(() => stopped);
    } catch (err) {
      logger.error({ err, sweep: name }, 'sweep failed; will retry next interval');
    }
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = run().finally(schedule);
    }, intervalMs);
  };
  running = run().finally(schedule);

  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
