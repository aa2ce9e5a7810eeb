// Lets a request wait for a worker's outcome without polling: the process's one listening
// connection (api/http/listener.ts) calls `wake` with the order id of each notification, and
// the waiter wakes the requests waiting on that id, in memory. Notifications can be missed
// (reconnects), so a waiter never trusts them for content: on wake-up or at its deadline the
// caller re-reads the row, which is the only truth.

export interface Expectation {
  /** Resolves on the first notification for the id, or at the deadline. */
  done: Promise<'notified' | 'deadline'>;
  /** Stops waiting (idempotent). */
  cancel(): void;
}

export interface OutcomeWaiter {
  expect(id: string, deadlineMs: number): Expectation;
  /** Wakes every request waiting on the id. */
  wake(id: string): void;
}

export function createOutcomeWaiter(): OutcomeWaiter {
  const waiting = new Map<string, Set<(how: 'notified') => void>>();
  return {
    expect(id, deadlineMs) {
      let resolve!: (how: 'notified' | 'deadline') => void;
      const done = new Promise<'notified' | 'deadline'>((r) => (resolve = r));
      const set = waiting.get(id) ?? new Set();
      waiting.set(id, set);
      const cleanup = () => {
        clearTimeout(timer);
        set.delete(finish);
        if (set.size === 0) waiting.delete(id);
      };
      const finish = (how: 'notified' | 'deadline') => {
        cleanup();
        resolve(how);
      };
      set.add(finish);
      const timer = setTimeout(() => finish('deadline'), deadlineMs);
      return { done, cancel: cleanup };
    },
    wake(id) {
      waiting.get(id)?.forEach((resolve) => resolve('notified'));
    },
  };
}
