// Every delayed action of the simulator (disbursement settlement, auto-pay, callback retries,
// injected latency, held "timeout" sockets) goes through one registry, so stopping the
// simulator cancels them all and nothing keeps the process alive or fires after a test ends.
// Those a restart must not lose are also journaled as deadlines (below).
import type { Logger } from 'pino';
import { z } from 'zod';
import { MODES, type Fault } from './faults.ts';
import type { Journal } from './journal.ts';

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

/**
 * Work due at a set time that a restart must not lose (settling a payout, auto-pay, a refund's
 * outcome): journaled with its due time, resumed at start, overdue ones at once. A deadline is
 * removed in the step that runs it, so it runs once unless the process dies inside that step;
 * the work checks the record's state first, so running it again is harmless.
 */
export interface Deadlines {
  /** What an action does for a key; registered once, before resume(). */
  on(action: string, run: (key: string, fault: Fault | null) => void): void;
  /** Runs `action` for `key` at `due`; `fault` is a callback fault given when it was asked for. */
  at(action: string, key: string, due: Date, fault?: Fault | null): void;
  /** Schedules the deadlines loaded from the journal. */
  resume(): void;
}

const deadlineSchema = z.object({
  action: z.string(),
  key: z.string(),
  due: z.coerce.date(),
  fault: z.object({ mode: z.enum(MODES), latencyMs: z.number().optional(), status: z.number().optional() }).nullable(),
});

export function createDeadlines(deps: { journal: Journal; timers: Timers; logger: Logger }): Deadlines {
  const { journal, timers, logger } = deps;
  const actions = new Map<string, (key: string, fault: Fault | null) => void>();

  function schedule(action: string, key: string, due: Date, fault: Fault | null) {
    timers.after(Math.max(0, due.getTime() - Date.now()), () => {
      const run = actions.get(action);
      if (run) run(key, fault);
      else logger.warn({ action, key }, 'deadline of an unknown action dropped');
      journal.remove('deadline', `${action} ${key}`);
    });
  }

  return {
    on(action, run) {
      actions.set(action, run);
    },
    at(action, key, due, fault = null) {
      journal.put('deadline', `${action} ${key}`, { action, key, due, fault });
      schedule(action, key, due, fault);
    },
    resume() {
      for (const [, d] of journal.loaded('deadline', deadlineSchema)) schedule(d.action, d.key, d.due, d.fault);
    },
  };
}
