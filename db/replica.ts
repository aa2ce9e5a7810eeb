// Reads that may lag: history lists, the profits report and export builds go to a streaming
// replica (DATABASE_REPLICA_URL) when one is configured and fresh; everything else reads the
// primary (docs/architecture.md, Reads from a replica).
//
// Invariants and why they hold:
// - A lagging or unreachable replica is not read: every LAG_CHECK_MS the primary's WAL position
//   is sampled and the replica's replay position read; the replica is as stale as the age of the
//   newest sample it has replayed. Past DATABASE_REPLICA_MAX_LAG_MS (or on any error) reads()
//   answers the primary until a later check finds it fresh again. An idle primary writes no WAL,
//   so an idle pair stays fresh; a replica cut off from a busy primary goes stale within the bound.
// - An export misses nothing committed before its build started: caughtUp() waits until the
//   replica has replayed the primary's position taken at the call, and the build reads the
//   primary when it does not within the bound.
import { pooledConnections, type Config } from './config.ts';
import { logger } from './logger.ts';
import { replicaFresh } from './metrics.ts';
import { createPool, sql, type Db, type Pool } from './pool.ts';

/** How often the replica's lag is measured: a fraction of any useful lag bound, one query each side. */
const LAG_CHECK_MS = 500;
/** How often caughtUp() asks the replica again while it waits. */
const CATCH_UP_POLL_MS = 20;

export interface Replica {
  /** The replica's own pool, or null when none is configured. */
  readonly pool: Pool | null;
  /** Where a read that may lag goes now: the replica while fresh, else the primary. */
  reads(): Pool;
  /**
   * Whether the replica has replayed the primary's current position within `timeoutMs`. Call it
   * outside any transaction (slonik refuses the primary pool inside one).
   */
  caughtUp(timeoutMs: number): Promise<boolean>;
  /**
   * Runs `fn` in a read-only transaction on the replica, also from inside a primary transaction
   * (the export build reads here and writes its chunks there). Only with a replica.
   */
  readTransaction<T>(fn: (db: Db) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** No replica: every read is the primary's. */
export function primaryOnly(primary: Pool): Replica {
  return {
    pool: null,
    reads: () => primary,
    caughtUp: async () => false,
    readTransaction: () => Promise.reject(new Error('no replica is configured')),
    close: async () => {},
  };
}

/** An LSN (`16/B374D848`) as one comparable number. */
export function lsnValue(lsn: string): bigint {
  const [hi, lo] = lsn.split('/');
  return (BigInt(`0x${hi}`) << 32n) | BigInt(`0x${lo}`);
}

function primaryPosition(primary: Pool): Promise<string> {
  return primary.oneFirst(sql.unsafe`select pg_current_wal_lsn()::text`) as Promise<string>;
}

// A server that is not in recovery (a replica URL pointing at the primary itself) is always current.
function replayedPosition(replica: Pool): Promise<string> {
  return replica.oneFirst(sql.unsafe`
    select (case when pg_is_in_recovery() then pg_last_wal_replay_lsn() else pg_current_wal_lsn() end)::text`) as Promise<string>;
}

export async function startReplica(primary: Pool, replica: Pool, maxLagMs: number): Promise<Replica> {
  const samples: { at: number; lsn: bigint }[] = [];
  let fresh = false;
  let checking = false;
  let closed = false;

  async function check(): Promise<void> {
    if (checking || closed) return;
    checking = true;
    let now = false;
    try {
      samples.push({ at: Date.now(), lsn: lsnValue(await primaryPosition(primary)) });
      const replayed = lsnValue(await replayedPosition(replica));
      // Drop every sample the replica has passed but the newest: its age is the replica's staleness.
      let newest = -1;
      for (let i = 0; i < samples.length; i++) if (samples[i].lsn <= replayed) newest = i;
      if (newest > 0) samples.splice(0, newest);
      // Behind every sample (the first check of a busy primary, or a replica far behind): unknown, so stale.
      const staleness = newest >= 0 ? Date.now() - samples[0].at : Number.POSITIVE_INFINITY;
      if (samples.length > 1_000) samples.splice(0, samples.length - 1_000);
      now = staleness <= maxLagMs;
      if (!now && fresh) logger.warn({ stalenessMs: staleness, maxLagMs }, 'replica lags: reads go to the primary');
    } catch (err) {
      if (fresh) logger.warn({ err }, 'replica unreachable: reads go to the primary');
    } finally {
      checking = false;
    }
    if (now && !fresh) logger.info('replica is fresh: lagging reads go to it');
    fresh = now;
    replicaFresh.set(fresh ? 1 : 0);
  }

  await check();
  const timer = setInterval(() => void check(), LAG_CHECK_MS);
  timer.unref();

  return {
    pool: replica,
    reads: () => (fresh ? replica : primary),
    async caughtUp(timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      try {
        const target = lsnValue(await primaryPosition(primary));
        for (;;) {
          if (lsnValue(await replayedPosition(replica)) >= target) return true;
          if (Date.now() >= deadline) return false;
          await new Promise((resolve) => setTimeout(resolve, CATCH_UP_POLL_MS));
        }
      } catch (err) {
        logger.warn({ err }, 'replica unreachable: reading the primary');
        return false;
      }
    },
    // slonik's own transaction() would make the caller's primary transaction "foreign" to every
    // statement inside it; a plain connection with begin/commit leaves the caller's context alone.
    readTransaction(fn) {
      return replica.connect(async (connection) => {
        await connection.query(sql.unsafe`begin transaction isolation level repeatable read, read only`);
        try {
          const result = await fn(connection);
          await connection.query(sql.unsafe`commit`);
          return result;
        } catch (err) {
          await connection.query(sql.unsafe`rollback`).catch(() => undefined);
          throw err;
        }
      });
    },
    async close() {
      closed = true;
      clearInterval(timer);
      await replica.end();
    },
  };
}

/** The process's Replica: DATABASE_REPLICA_URL's pool (same connection rules as DATABASE_URL's), or none. */
export async function openReplica(config: Config, primary: Pool, size: number, name: string, statementTimeoutMs?: number): Promise<Replica> {
  if (!config.DATABASE_REPLICA_URL) return primaryOnly(primary);
  const replica = await createPool(config.DATABASE_REPLICA_URL, { size, name: `${name}-replica`, statementTimeoutMs, ...pooledConnections(config), insideOtherTransactions: true });
  return startReplica(primary, replica, config.DATABASE_REPLICA_MAX_LAG_MS);
}
