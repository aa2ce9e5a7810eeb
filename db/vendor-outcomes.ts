// What vendors answered lately, shared by every worker process through Postgres: the facts
// adaptive routing (db/routing.ts) scores vendors by.
//
// - Only calls that start something are counted (createQris, disburse): they are what routing
//   chooses a vendor for. ok: done; failed: surely not done (a refusal of the payout itself, the
//   bank naming another holder, is about the account, not the vendor, and counts as ok); unknown:
//   maybe done (timeout, 5xx). Each call's duration goes into a fixed histogram.
// - Recording is a map update in memory (gateways/registry.ts calls it around every such call):
//   nothing on an order's path waits for it. Each worker process adds its counts to
//   vendor_outcomes once a second, one statement for everything counted since. A process killed
//   in between loses at most that second of counts: statistics, never money or a record.
// - Rows are kept for an hour (the flusher deletes older ones once a minute); the routing window
//   is seconds to minutes.
import { z } from 'zod';
import { logger } from './logger.ts';
import { sql, type Db } from './pool.ts';

/** Upper bounds of the latency cells, in ms; the last cell counts everything slower. */
export const LATENCY_BOUNDS_MS = [100, 250, 500, 1_000, 2_500, 5_000, 10_000] as const;
/** Width of one counting bucket: the window slides by this much. */
export const BUCKET_SECONDS = 1;
const KEEP_SECONDS = 3600;

export type CallOutcome = 'ok' | 'failed' | 'unknown';

interface Counts {
  bucketStart: number;
  vendor: string;
  method: string;
  destination: string;
  ok: number;
  failed: number;
  unknown: number;
  latency: number[];
}

const pending = new Map<string, Counts>();

/** Counts one call (in memory; flushVendorOutcomes writes it). `at` is for tests. */
export function recordVendorOutcome(call: { vendor: string; method: string; destination?: string | null; outcome: CallOutcome; ms: number; at?: number }): void {
  const bucketStart = Math.floor((call.at ?? Date.now()) / 1000 / BUCKET_SECONDS) * BUCKET_SECONDS * 1000;
  const destination = call.destination ?? '';
  const key = `${bucketStart}|${call.vendor}|${call.method}|${destination}`;
  let counts = pending.get(key);
  if (!counts) {
    counts = { bucketStart, vendor: call.vendor, method: call.method, destination, ok: 0, failed: 0, unknown: 0, latency: new Array(LATENCY_BOUNDS_MS.length + 1).fill(0) };
    pending.set(key, counts);
  }
  counts[call.outcome] += 1;
  const cell = LATENCY_BOUNDS_MS.findIndex((bound) => call.ms <= bound);
  counts.latency[cell === -1 ? LATENCY_BOUNDS_MS.length : cell] += 1;
}

/**
 * Adds what was counted since the last flush to vendor_outcomes: one statement, rows in key order
 * so two processes flushing at once lock them in the same order (no deadlock).
 */
export async function flushVendorOutcomes(db: Db): Promise<number> {
  if (pending.size === 0) return 0;
  const rows = [...pending.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, c]) => c);
  pending.clear();
  await db.query(sql.unsafe`
    insert into vendor_outcomes as o (bucket_start, vendor_code, method, destination, ok, failed, unknown, latency_ms_buckets)
    select to_timestamp(t.bucket_ms / 1000.0), t.vendor_code, t.method, t.destination, t.ok, t.failed, t.unknown, string_to_array(t.latency, ',')::int[]
    from ${sql.unnest(
      rows.map((c) => [c.bucketStart, c.vendor, c.method, c.destination, c.ok, c.failed, c.unknown, c.latency.join(',')]),
      ['int8', 'text', 'text', 'text', 'int4', 'int4', 'int4', 'text'],
    )} as t(bucket_ms, vendor_code, method, destination, ok, failed, unknown, latency)
    on conflict on constraint vendor_outcomes_pkey do update
      set ok = o.ok + excluded.ok, failed = o.failed + excluded.failed, unknown = o.unknown + excluded.unknown,
          latency_ms_buckets = array(select x + y from unnest(o.latency_ms_buckets, excluded.latency_ms_buckets) as l(x, y))`);
  return rows.length;
}

export async function deleteOldOutcomes(db: Db): Promise<void> {
  await db.query(sql.unsafe`delete from vendor_outcomes where bucket_start < now() - make_interval(secs => ${KEEP_SECONDS})`);
}

/** Flushes once a second (and prunes once a minute) until stopped; stop() flushes what is left. */
export function startOutcomeRecorder(db: Db, intervalMs = 1_000): { stop(): Promise<void> } {
  let flushes = 0;
  let running: Promise<unknown> = Promise.resolve();
  const tick = () => {
    running = (async () => {
      await flushVendorOutcomes(db);
      if (++flushes % Math.max(1, Math.round(60_000 / intervalMs)) === 0) await deleteOldOutcomes(db);
    })().catch((err: unknown) => logger.warn({ err }, 'vendor outcomes not recorded (routing scores miss them)'));
  };
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
      await flushVendorOutcomes(db).catch((err: unknown) => logger.warn({ err }, 'vendor outcomes not recorded at stop'));
    },
  };
}

const outcomeRow = z.object({
  vendor_code: z.string(),
  method: z.string(),
  destination: z.string(),
  ok: z.number(),
  failed: z.number(),
  unknown: z.number(),
  latency_ms_buckets: z.array(z.number()),
  /** Seconds since the bucket began (the one under way: under BUCKET_SECONDS). */
  age_seconds: z.number().optional(),
});
export type OutcomeRow = z.infer<typeof outcomeRow>;

/** The counts of the last `windowSeconds` (the bucket under way included), one row per bucket and key. */
export function readRecentOutcomes(db: Db, windowSeconds: number): Promise<readonly OutcomeRow[]> {
  return db.any(sql.type(outcomeRow)`
    select vendor_code, method, destination, ok, failed, unknown, latency_ms_buckets,
           extract(epoch from now() - bucket_start)::float8 as age_seconds
    from vendor_outcomes
    where bucket_start > now() - make_interval(secs => ${windowSeconds})`);
}

const readOutcomeTimelineRow = z.object({ bucket_ms: z.number(), vendor_code: z.string(), calls: z.number(), ok: z.number(), unknown: z.number(), failed: z.number() });

/** A's share over time, for the routing bench: calls per bucket and vendor of one method since `since`. */
export function readOutcomeTimeline(db: Db, method: string, since: Date) {
  return db.any(sql.type(readOutcomeTimelineRow)`
    select (extract(epoch from bucket_start) * 1000)::int8 as bucket_ms, vendor_code, sum(ok + failed + unknown)::int as calls, sum(ok)::int as ok, sum(unknown)::int as unknown, sum(failed)::int as failed
    from vendor_outcomes
    where method = ${method} and bucket_start >= ${since.toISOString()}::timestamptz
    group by bucket_start, vendor_code
    order by bucket_start, vendor_code`);
}
