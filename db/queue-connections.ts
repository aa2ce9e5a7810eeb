// The connections a worker's pg-boss runs on, owned by Kasir and handed to pg-boss as its `db`
// (pg-boss's public adapter interface: `executeSql`, and `listen` for useListenNotify). Two things
// pg-boss's own pool cannot do: name its hot statements as prepared statements, and open the
// LISTEN connection on another URL than the one its statements go to (Postgres itself, when
// DATABASE_URL is a transaction pooler). pg-boss opens and closes only a pool it made itself, so
// this one is closed by the PgBoss that startBoss (db/queue.ts) returns, when it stops.
import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Db as BossDb } from 'pg-boss';
import { newClient, poolConnection } from './database-hosts.ts';
import { logger } from './logger.ts';

type ListenHandle = Awaited<ReturnType<NonNullable<BossDb['listen']>>>;

// pg-boss's own pool's values: a connection that cannot be had in 10 s fails the statement; the
// LISTEN connection checks every 10 s that it still listens, giving the check 5 s, and reconnects
// after 1 s, doubling to 30 s while Postgres stays away.
const CONNECT_TIMEOUT_MS = 10_000;
const LISTEN_CHECK_INTERVAL_MS = 10_000;
const LISTEN_CHECK_TIMEOUT_MS = 5_000;
const RECONNECT_FIRST_DELAY_MS = 1_000;
const RECONNECT_MAX_DELAY_MS = 30_000;

export interface QueueConnectionsOptions {
  url: string;
  max: number;
  /** Name pg-boss's statements; off behind PgBouncer < 1.21, as for Kasir's own pool. */
  preparedStatements: boolean;
  /** Where the LISTEN connection goes (default `url`): Postgres itself, never a transaction pooler. */
  listenUrl?: string;
}

export class QueueConnections implements BossDb {
  readonly #pool: pg.Pool;
  readonly #prepared: boolean;
  readonly #listenUrl: string;

  constructor(options: QueueConnectionsOptions) {
    this.#pool = new pg.Pool({
      ...poolConnection(options.url),
      max: options.max,
      application_name: 'pgboss',
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    });
    // An idle connection that breaks (Postgres restarted) is dropped from the pool; the next
    // statement opens another. Without a listener the error would end the process.
    this.#pool.on('error', (err) => logger.error({ err }, 'pg-boss connection error'));
    this.#prepared = options.preparedStatements;
    this.#listenUrl = options.listenUrl ?? options.url;
  }

  async executeSql(text: string, values?: unknown[]): Promise<pg.QueryResult> {
    const name = this.#prepared && values?.length ? statementName(text) : null;
    return name ? this.#pool.query({ name, text, values }) : this.#pool.query(text, values);
  }

  /**
   * pg-boss's LISTEN connection: a client of its own (never a pooled connection), kept listening.
   * A first connection that fails rejects, and pg-boss goes on polling only. Once listening, a
   * lost connection, or one that no longer listens (the periodic check), is replaced, and
   * `onReconnect` after each LISTEN tells pg-boss to fetch what it may have missed meanwhile.
   */
  async listen(channel: string, onNotification: (payload: string) => void, onReconnect: () => void): Promise<ListenHandle> {
    let closed = false;
    let listening = false;
    let client: pg.Client | null = null;
    let check: NodeJS.Timeout | undefined;
    let retry: NodeJS.Timeout | undefined;
    let failures = 0;

    const reconnect = () => {
      if (closed || retry) return;
      const wait = Math.min(RECONNECT_MAX_DELAY_MS, RECONNECT_FIRST_DELAY_MS * 2 ** failures++);
      retry = setTimeout(() => {
        retry = undefined;
        connect().catch(reconnect);
      }, wait).unref();
    };

    const connect = async () => {
      const next = newClient(this.#listenUrl, {
        application_name: 'pgboss-listen',
        connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
        keepAlive: true,
        keepAliveInitialDelayMillis: LISTEN_CHECK_INTERVAL_MS,
      });
      let lost = false;
      let up = false;
      const lose = (err: unknown) => {
        if (lost) return;
        lost = true;
        clearTimeout(check);
        if (client === next) client = null;
        next.end().catch(() => undefined);
        if (closed || !listening) return;
        if (up) logger.warn({ err }, 'pg-boss LISTEN connection lost; reconnecting');
        reconnect();
      };
      const verify = () => {
        check = setTimeout(() => {
          const stillListening = next.query<{ listening: boolean }>(
            'select exists (select 1 from pg_listening_channels() c where c = $1) as listening', [channel]);
          const deadline = new Promise<never>((_, reject) => {
            check = setTimeout(() => reject(new Error('LISTEN check timed out')), LISTEN_CHECK_TIMEOUT_MS).unref();
          });
          Promise.race([stillListening, deadline]).then(
            ({ rows }) => {
              clearTimeout(check);
              if (rows[0]?.listening) verify();
              else lose(new Error('the LISTEN connection no longer listens'));
            },
            (err) => lose(err),
          );
        }, LISTEN_CHECK_INTERVAL_MS).unref();
      };
      next.on('error', lose);
      next.on('end', () => lose(new Error('LISTEN connection ended')));
      next.on('notification', (message) => {
        if (message.payload !== undefined) onNotification(message.payload);
      });
      // Known before it connects, so a close() while it connects ends it too.
      client = next;
      try {
        await next.connect();
        await next.query(`listen ${pg.escapeIdentifier(channel)}`);
      } catch (err) {
        lose(err);
        throw err;
      }
      if (lost) throw new Error('LISTEN connection closed while connecting');
      failures = 0;
      listening = up = true;
      verify();
      onReconnect();
    };

    await connect();
    return {
      async close() {
        closed = true;
        clearTimeout(retry);
        clearTimeout(check);
        await client?.end().catch(() => undefined);
        client = null;
      },
    };
  }

  async close(): Promise<void> {
    if (!this.#pool.ending) await this.#pool.end();
  }
}

// Named after a hash of their text, as db/pool.ts names Kasir's own, pg-boss's fetch, completion
// and insert are planned once per connection (pg-boss sends unnamed statements, so Postgres
// parses and plans every call; the completion's json_to_recordset over 20 columns is the
// costliest). Only statements with parameters are named (pg-boss's multi-statement texts have
// none and must stay simple queries), and only once a text has been seen a few times, with a
// bound on how many: pg-boss writes some values into its texts (queue names, batch sizes, a
// maintenance statement's literals), and a connection must not collect a statement per value.
const seen = new Map<string, number>();
const names = new Map<string, string>();

function statementName(text: string): string | null {
  const known = names.get(text);
  if (known) return known;
  const count = (seen.get(text) ?? 0) + 1;
  if (seen.size >= 1_000) seen.clear();
  seen.set(text, count);
  if (count < 3 || names.size >= 100) return null;
  const name = `b${createHash('sha1').update(text).digest('base64url').slice(0, 20)}`;
  names.set(text, name);
  return name;
}
