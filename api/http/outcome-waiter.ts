// Lets a request wait for a worker's outcome without polling: the process's one listening
// connection (api/http/listener.ts) calls `wake` with the order id of each notification (and
// the answer the confirmation stored for the Idempotency-Key, when the notification carried
// it), and the waiter wakes the requests waiting on that id, in memory. Notifications can be
// missed (reconnects), so a waiter never depends on one: at its deadline, or on a wake-up
// without an answer, the caller re-reads the row, which is the only truth. An answer carried
// by the notification is that truth already: the same transaction stored it and sent it.

export interface Outcome {
  /** False at the deadline. */
  notified: boolean;
  /** The V1 answer stored for the Idempotency-Key by the transaction that notified; null if none came. */
  storedAnswer: string | null;
}

export interface Expectation {
  /** Resolves on the first notification for the id, or at the deadline. */
  done: Promise<Outcome>;
  /** Stops waiting (idempotent). */
  cancel(): void;
}

export interface OutcomeWaiter {
  expect(id: string, deadlineMs: number): Expectation;
  /** Wakes every request waiting on the id. */
  wake(id: string, storedAnswer?: string | null): void;
}

export function createOutcomeWaiter(): OutcomeWaiter {
  const waiting = new Map<string, Set<(outcome: Outcome) => void>>();
  return {
    expect(id, deadlineMs) {
      let resolve!: (outcome: Outcome) => void;
      const done = new Promise<Outcome>((r) => (resolve = r));
      const set = waiting.get(id) ?? new Set();
      waiting.set(id, set);
      const cleanup = () => {
        clearTimeout(timer);
        set.delete(finish);
        if (set.size === 0) waiting.delete(id);
      };
      const finish = (outcome: Outcome) => {
        cleanup();
        resolve(outcome);
      };
      set.add(finish);
      const timer = setTimeout(() => finish({ notified: false, storedAnswer: null }), deadlineMs);
      return { done, cancel: cleanup };
    },
    wake(id, storedAnswer = null) {
      waiting.get(id)?.forEach((resolve) => resolve({ notified: true, storedAnswer }));
    },
  };
}
