// Each API process holds ONE listening connection, shared by every channel it cares about
// (never a LISTEN connection per request). Notifications are hints, never content, and are
// lost while the connection is down: after every (re)connection `onConnect` runs so that
// subscribers can assume anything changed meanwhile (caches drop, waiters re-read at their
// deadline anyway). A lost connection is re-opened every RECONNECT_DELAY_MS until it succeeds.
import pg from 'pg';
import { newClient } from '../../db/database-hosts.ts';
import { logger } from '../../db/logger.ts';

const RECONNECT_DELAY_MS = 500;

export type ChannelHandlers = Record<string, (payload: string) => void>;

export interface Listener {
  close(): Promise<void>;
}

export async function startListener(databaseUrl: string, handlers: ChannelHandlers, onConnect: () => void = () => {}): Promise<Listener> {
  let client: pg.Client | null = null;
  let started = false;
  let closed = false;

  async function connect(): Promise<void> {
    const next = newClient(databaseUrl, { keepAlive: true, application_name: 'kasir-api-listener' });
    let lost = false;
    const lose = (err?: unknown) => {
      if (lost) return;
      lost = true;
      if (client === next) client = null;
      next.end().catch(() => undefined);
      if (closed || !started) return;
      logger.warn({ err }, 'notification listener lost its connection; reconnecting');
      setTimeout(() => void connect().catch(() => undefined), RECONNECT_DELAY_MS).unref();
    };
    next.on('notification', (message) => handlers[message.channel]?.(message.payload ?? ''));
    next.on('error', lose);
    next.on('end', () => lose());
    try {
      await next.connect();
      for (const channel of Object.keys(handlers)) await next.query(`listen ${pg.escapeIdentifier(channel)}`);
    } catch (err) {
      lose(err);
      throw err;
    }
    client = next;
    onConnect();
  }

  await connect();
  started = true;

  return {
    async close() {
      closed = true;
      await client?.end().catch(() => undefined);
    },
  };
}
