// Lets a request wait for a worker's outcome without polling: each API process holds ONE
// listening connection on one channel, and wakes waiting requests by order id in memory
// (never a LISTEN connection per request). Notifications can be missed (reconnects), so a
// waiter never trusts them for content: on wake-up or at its deadline the caller re-reads
// the row, which is the only truth.
import pg from 'pg';
import { logger } from '../../db/logger.ts';

export interface Expectation {
  /** Resolves on the first notification for the id, or at the deadline. */
  done: Promise<'notified' | 'deadline'>;
  /** Stops waiting (idempotent). */
  cancel(): void;
}

export interface OutcomeWaiter {
  expect(id: string, deadlineMs: number): Expectation;
  close(): Promise<void>;
}

export async function startOutcomeWaiter(databaseUrl: string, channel: string): Promise<OutcomeWaiter> {
  const waiting = new Map<string, Set<(how: 'notified') => void>>();
  let client: pg.Client | null = null;
  let closed = false;

  async function connect(): Promise<void> {
    const next = new pg.Client({ connectionString: databaseUrl, keepAlive: true });
    next.on('notification', (message) => {
      const wake = message.payload ? waiting.get(message.payload) : undefined;
      wake?.forEach((resolve) => resolve('notified'));
    });
    next.on('error', (err) => {
      logger.warn({ err }, 'outcome listener lost its connection; reconnecting');
      next.end().catch(() => undefined);
      if (client === next) client = null;
      if (!closed) setTimeout(() => void connect().catch(() => undefined), 500).unref();
    });
    await next.connect();
    await next.query(`listen ${pg.escapeIdentifier(channel)}`);
    client = next;
  }

  await connect();

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
    async close() {
      closed = true;
      await client?.end().catch(() => undefined);
    },
  };
}
