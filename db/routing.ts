// Which vendor a new order or payout goes to first. A route (a merchant's own for a method, or the
// platform's) is in one of two modes:
// - priority (the default): its vendors in priority order, always.
// - adaptive: vendors doing badly now are demoted behind those that are not. A vendor is demoted
//   for a method when, over the last ROUTING_WINDOW_SECONDS, it answered at least
//   ROUTING_MIN_CALLS calls and more than ROUTING_DEMOTE_PERCENT of them failed or ended unknown,
//   or its p95 latency passed half of VENDOR_TIMEOUT_MS (close to timing out); recent calls weigh
//   more (a one-second bucket's weight halves every tenth of the window), so a brownout shows in seconds. Vendors not
//   demoted keep priority order (priority stays the tie-breaker, so a healthy route behaves as in
//   priority mode); demoted ones follow, best success ratio first. ROUTING_EXPLORE_PERCENT of
//   requests go to a demoted vendor first anyway, so its recovery shows in its counts. A vendor
//   with too few calls in the window is not judged: a demoted one stays demoted, one with no
//   call at all in the window takes its priority place again.
// - A payout to a bank or e-wallet is judged by that destination's counts at the vendor when they
//   reach ROUTING_MIN_CALLS, else by the method's.
//
// Routing orders the vendors of a request not yet sent; it never moves one already sent. The
// workers call it only before the first vendor call of an attempt (and after a definite refusal,
// for the next vendor), and an unknown outcome still stays with its vendor (gateways/gateway.ts).
//
// Scores come from vendor_outcomes (db/vendor-outcomes.ts), read by each process at most every
// SCORE_CACHE_MS and served from memory in between: routing adds no statement to an order. The
// read also writes any demotion or restoration to vendor_health; the one process whose update
// flips the row logs it and adds the vendor_health_events row (operators, never a webhook).
import { z } from 'zod';
import type { Config } from './config.ts';
import { logger } from './logger.ts';
import { sql, type Db } from './pool.ts';
import { LATENCY_BOUNDS_MS, readRecentOutcomes, type OutcomeRow } from './vendor-outcomes.ts';
import type { RouteMethod, RouteMode, RoutedVendor } from './vendors.ts';

export interface RoutingPolicy {
  windowSeconds: number;
  /** A bucket's weight halves every this many seconds of age: a tenth of the window (3 s by default). */
  halfLifeSeconds: number;
  explorePercent: number;
  minCalls: number;
  demotePercent: number;
  /** p95 latency above which a vendor is demoted: half the vendor timeout. */
  slowMs: number;
}

export function routingPolicy(config: Pick<Config, 'ROUTING_WINDOW_SECONDS' | 'ROUTING_EXPLORE_PERCENT' | 'ROUTING_MIN_CALLS' | 'ROUTING_DEMOTE_PERCENT' | 'VENDOR_TIMEOUT_MS'>): RoutingPolicy {
  return {
    windowSeconds: config.ROUTING_WINDOW_SECONDS,
    halfLifeSeconds: config.ROUTING_WINDOW_SECONDS / 10,
    explorePercent: config.ROUTING_EXPLORE_PERCENT,
    minCalls: config.ROUTING_MIN_CALLS,
    demotePercent: config.ROUTING_DEMOTE_PERCENT,
    slowMs: Math.floor(config.VENDOR_TIMEOUT_MS / 2),
  };
}

export interface VendorScore {
  vendor: string;
  method: string;
  /** '' for all destinations of the method. */
  destination: string;
  calls: number;
  ok: number;
  failed: number;
  unknown: number;
  successRatio: number;
  failedRatio: number;
  unknownRatio: number;
  /** Upper bound of the latency cell holding the 95th percentile; null past the last bound. */
  p95Ms: number | null;
  /** Of the method's calls in the window (all vendors), the part this vendor answered. */
  share: number;
  /** Demoted for the method at the last judgement (vendor_health): kept while its calls are too few to judge. */
  demotedBefore: boolean;
  /** The window's calls failed or unknown, every call alike (what restores a demoted vendor). */
  windowBadRatio: number;
  /** p95 latency over the window's calls alike; null past the last bound. */
  windowP95Ms: number | null;
}

export type Scores = ReadonlyMap<string, VendorScore>;

const keyOf = (vendor: string, method: string, destination: string) => `${vendor}|${method}|${destination}`;

/**
 * Sums the window's rows per vendor, method and destination, and per vendor and method (''
 * destination). The ratios and the p95 weigh recent buckets more: a bucket's weight halves every
 * `halfLifeSeconds`, so a brownout shows within seconds however long the healthy past in the
 * window, and so does a recovery. `calls` (and the minimum judged on it) count every call alike.
 */
export function scoreOutcomes(rows: readonly OutcomeRow[], halfLifeSeconds = Infinity, demotedBefore: ReadonlySet<string> = new Set()): Map<string, VendorScore> {
  const sums = new Map<string, { vendor: string; method: string; destination: string; calls: number; bad: number; ok: number; failed: number; unknown: number; latency: number[]; rawLatency: number[] }>();
  const add = (vendor: string, method: string, destination: string, row: OutcomeRow, weight: number) => {
    const key = keyOf(vendor, method, destination);
    let sum = sums.get(key);
    if (!sum) sums.set(key, (sum = { vendor, method, destination, calls: 0, bad: 0, ok: 0, failed: 0, unknown: 0, latency: new Array(LATENCY_BOUNDS_MS.length + 1).fill(0), rawLatency: new Array(LATENCY_BOUNDS_MS.length + 1).fill(0) }));
    sum.calls += row.ok + row.failed + row.unknown;
    sum.bad += row.failed + row.unknown;
    row.latency_ms_buckets.forEach((n, i) => (sum.rawLatency[i] = (sum.rawLatency[i] ?? 0) + n));
    sum.ok += weight * row.ok;
    sum.failed += weight * row.failed;
    sum.unknown += weight * row.unknown;
    row.latency_ms_buckets.forEach((n, i) => (sum.latency[i] = (sum.latency[i] ?? 0) + weight * n));
  };
  const methodCalls = new Map<string, number>();
  for (const row of rows) {
    const weight = 0.5 ** (Math.max(0, row.age_seconds ?? 0) / halfLifeSeconds);
    add(row.vendor_code, row.method, '', row, weight);
    if (row.destination !== '') add(row.vendor_code, row.method, row.destination, row, weight);
    methodCalls.set(row.method, (methodCalls.get(row.method) ?? 0) + row.ok + row.failed + row.unknown);
  }
  const scores = new Map<string, VendorScore>();
  for (const [key, s] of sums) {
    const calls = s.calls;
    const weighed = s.ok + s.failed + s.unknown;
    if (calls === 0 || weighed === 0) continue;
    const p95 = (cells: number[], total: number) => {
      let seen = 0;
      for (let i = 0; i < cells.length; i++) {
        seen += cells[i];
        if (seen >= 0.95 * total) return LATENCY_BOUNDS_MS[i] ?? null;
      }
      return null;
    };
    scores.set(key, {
      vendor: s.vendor,
      method: s.method,
      destination: s.destination,
      calls,
      ok: s.ok,
      failed: s.failed,
      unknown: s.unknown,
      successRatio: s.ok / weighed,
      failedRatio: s.failed / weighed,
      unknownRatio: s.unknown / weighed,
      p95Ms: p95(s.latency, weighed),
      share: calls / (methodCalls.get(s.method) ?? calls),
      demotedBefore: demotedBefore.has(`${s.vendor}|${s.method}`),
      windowBadRatio: s.bad / calls,
      windowP95Ms: p95(s.rawLatency, calls),
    });
  }
  return scores;
}

export interface Judgement {
  demoted: boolean;
  /** Why, in words for routes:explain and the log. */
  reason: string;
}

export function judge(score: VendorScore | undefined, policy: RoutingPolicy): Judgement {
  // Too few calls to judge: a vendor that was demoted stays so (its calls are few because it is
  // demoted: exploration alone hovers around the minimum, and each dip would hand it the route's
  // traffic back for a second); one with no call at all in the window takes its place again.
  if (score && score.calls < policy.minCalls && score.demotedBefore) {
    return { demoted: true, reason: `${score.calls} calls in the window, under ${policy.minCalls}: kept demoted until its calls show recovery` };
  }
  if (!score || score.calls < policy.minCalls) {
    return { demoted: false, reason: `${score?.calls ?? 0} calls in the window, under ${policy.minCalls}: not judged` };
  }
  // Restored only on the whole window, every call alike: a demoted vendor's calls are
  // exploration's few, and weighted by recency a short run of good answers among them (its
  // timeouts are counted only when they end) would restore it mid-brownout for a second or two.
  if (score.demotedBefore) {
    const windowSlow = score.windowP95Ms === null || score.windowP95Ms > policy.slowMs;
    if (score.windowBadRatio * 100 > policy.demotePercent || windowSlow) {
      return {
        demoted: true,
        reason: `demoted, and over the whole window ${pct(score.windowBadRatio)} of ${score.calls} calls failed or unknown` +
          `${windowSlow ? `, p95 latency ${score.windowP95Ms === null ? `over ${LATENCY_BOUNDS_MS.at(-1)}` : `≤ ${score.windowP95Ms}`} ms` : ''}: kept demoted until the window is clean`,
      };
    }
  }
  const bad = score.failedRatio + score.unknownRatio;
  const badText = `${pct(bad)} of ${score.calls} calls failed or unknown (recent ones weigh more)`;
  if (bad * 100 > policy.demotePercent) return { demoted: true, reason: `${badText}, over ${policy.demotePercent}%` };
  if (score.p95Ms === null || score.p95Ms > policy.slowMs) return { demoted: true, reason: `p95 latency ${score.p95Ms === null ? `over ${LATENCY_BOUNDS_MS.at(-1)}` : `≤ ${score.p95Ms}`} ms, over ${policy.slowMs} ms` };
  return { demoted: false, reason: badText };
}

const pct = (ratio: number) => `${Math.round(ratio * 1000) / 10}%`;

export interface Ranked {
  code: string;
  priority: number;
  /** Which counts judged it: the payout destination's, the method's, or none yet. */
  scope: 'destination' | 'method';
  score: VendorScore | null;
  demoted: boolean;
  reason: string;
}

export interface Choice<V extends RoutedVendor = RoutedVendor> {
  mode: RouteMode;
  /** In the order to try them. */
  vendors: V[];
  /** Every vendor of the route with its judgement, in the order to try them. */
  ranking: Ranked[];
  /** The demoted vendor put first by exploration, if this request was one. */
  explored: string | null;
}

/**
 * Orders a route's enabled vendors (given in priority order) for one new request. `random` is
 * the exploration's source (tests pass their own).
 */
export function chooseVendors<V extends RoutedVendor>(
  route: { mode: RouteMode; vendors: V[] },
  method: RouteMethod,
  destination: string | null,
  scores: Scores,
  policy: RoutingPolicy,
  random: () => number = Math.random,
): Choice<V> {
  const judged = route.vendors.map((vendor) => {
    const own = destination ? scores.get(keyOf(vendor.code, method, destination)) : undefined;
    const useOwn = own !== undefined && own.calls >= policy.minCalls;
    const score = useOwn ? own : scores.get(keyOf(vendor.code, method, ''));
    const verdict = judge(score, policy);
    const ranked: Ranked = { code: vendor.code, priority: vendor.priority, scope: useOwn ? 'destination' : 'method', score: score ?? null, ...verdict };
    return { vendor, ranked };
  });
  if (route.mode === 'priority') return { mode: 'priority', vendors: route.vendors, ranking: judged.map((j) => j.ranked), explored: null };
  const healthy = judged.filter((j) => !j.ranked.demoted);
  const demoted = judged
    .filter((j) => j.ranked.demoted)
    .sort((a, b) => b.ranked.score!.successRatio - a.ranked.score!.successRatio || a.ranked.score!.unknownRatio - b.ranked.score!.unknownRatio);
  let ordered = [...healthy, ...demoted];
  let explored: string | null = null;
  if (healthy.length > 0 && demoted.length > 0 && random() * 100 < policy.explorePercent) {
    const pick = demoted[Math.min(demoted.length - 1, Math.floor(random() * demoted.length))];
    ordered = [pick, ...ordered.filter((j) => j !== pick)];
    explored = pick.vendor.code;
  }
  return { mode: 'adaptive', vendors: ordered.map((j) => j.vendor), ranking: ordered.map((j) => j.ranked), explored };
}

// ---------------------------------------------------------------- the process's scores

/** How long a process serves scores from memory: routing follows the counts within this. */
export const SCORE_CACHE_MS = 1_000;

let cache: { at: number; scores: Scores; refreshing: Promise<Scores> | null } | null = null;

/**
 * The window's scores, from memory when read less than SCORE_CACHE_MS ago. A stale copy is
 * served while one refresh runs (nothing waits on it but the first read of the process). A failed
 * read keeps the last scores (none at first: every route then routes by priority).
 */
export function currentScores(db: Db, policy: RoutingPolicy): Promise<Scores> {
  const now = Date.now();
  if (cache && now - cache.at < SCORE_CACHE_MS) return Promise.resolve(cache.scores);
  if (cache?.refreshing) return cache.at === 0 ? cache.refreshing : Promise.resolve(cache.scores);
  const previous = cache?.scores ?? new Map<string, VendorScore>();
  const refreshing = refreshScores(db, policy).then(
    (scores) => {
      cache = { at: Date.now(), scores, refreshing: null };
      return scores;
    },
    (err: unknown) => {
      logger.warn({ err }, 'routing scores not read; keeping the last ones');
      cache = { at: Date.now(), scores: previous, refreshing: null };
      return previous;
    },
  );
  cache = { at: cache?.at ?? 0, scores: previous, refreshing };
  return cache.at === 0 ? refreshing : Promise.resolve(previous);
}

/** Forgets the process's scores (tests, and a process that changed the policy). */
export function forgetScores(): void {
  cache = null;
}

const demotedNowRow = z.object({ key: z.string() });

/** The vendors demoted per method at the last judgement, as `vendor|method`. */
async function demotedNow(db: Db): Promise<Set<string>> {
  const rows = await db.any(sql.type(demotedNowRow)`select vendor_code || '|' || method as key from vendor_health where demoted`);
  return new Set(rows.map((r) => r.key));
}

async function refreshScores(db: Db, policy: RoutingPolicy): Promise<Scores> {
  const [rows, demoted] = await Promise.all([readRecentOutcomes(db, policy.windowSeconds), demotedNow(db)]);
  const scores = scoreOutcomes(rows, policy.halfLifeSeconds, demoted);
  await noteHealth(db, scores, policy);
  return scores;
}

const changedRow = z.object({ vendor_code: z.string(), method: z.string(), demoted: z.boolean(), detail: z.unknown() });

/**
 * Writes each vendor's judgement per method to vendor_health and returns the rows it changed,
 * with their events added. A vendor with no calls in the window is not judged: if it was
 * demoted it is restored (its place is its priority again).
 */
async function noteHealth(db: Db, scores: Scores, policy: RoutingPolicy): Promise<void> {
  const judged = [...scores.values()].filter((s) => s.destination === '').map((s) => ({ score: s, ...judge(s, policy) }));
  const changed = await db.any(sql.type(changedRow)`
    with input as (
      select * from ${sql.unnest(
        judged.map((j) => [j.score.vendor, j.score.method, j.demoted, JSON.stringify({ reason: j.reason, calls: j.score.calls, success_ratio: j.score.successRatio, unknown_ratio: j.score.unknownRatio, p95_ms: j.score.p95Ms, window_seconds: policy.windowSeconds })]),
        ['text', 'text', 'bool', 'text'],
      )} as t(vendor_code, method, demoted, detail)
    ), upserted as (
      insert into vendor_health as h (vendor_code, method, demoted)
      select vendor_code, method, demoted from input
      on conflict on constraint vendor_health_pkey do update set demoted = excluded.demoted, changed_at = now()
        where h.demoted <> excluded.demoted
      returning h.vendor_code, h.method, h.demoted, (h.xmax = 0) as inserted
    ), quiet as (
      update vendor_health h set demoted = false, changed_at = now()
      where h.demoted and not exists (select 1 from input i where i.vendor_code = h.vendor_code and i.method = h.method)
      returning h.vendor_code, h.method, h.demoted
    ), changed as (
      select u.vendor_code, u.method, u.demoted, i.detail::jsonb as detail from upserted u join input i using (vendor_code, method)
      where not u.inserted or u.demoted
      union all
      select vendor_code, method, demoted, jsonb_build_object('reason', 'no calls in the window', 'window_seconds', ${policy.windowSeconds}::int) from quiet
    ), events as (
      insert into vendor_health_events (vendor_code, method, event, detail)
      select vendor_code, method, case when demoted then 'demoted' else 'restored' end, detail from changed
    )
    select vendor_code, method, demoted, detail from changed`);
  for (const c of changed) {
    const line = { vendor: c.vendor_code, method: c.method, ...(c.detail as object) };
    if (c.demoted) logger.warn(line, 'vendor demoted by adaptive routing');
    else logger.info(line, 'vendor restored by adaptive routing');
  }
}

const eventRow = z.object({ vendor_code: z.string(), method: z.string(), event: z.string(), detail: z.unknown(), created_at: z.date() });

/** The latest demotions and restorations of these vendors for a method, newest first. */
export function recentHealthEvents(db: Db, vendors: readonly string[], method: RouteMethod, limit = 10) {
  return db.any(sql.type(eventRow)`
    select vendor_code, method, event, detail, created_at from vendor_health_events
    where vendor_code = any(${sql.array([...vendors], 'text')}) and method = ${method}
    order by created_at desc, id desc
    limit ${limit}`);
}

/** A route's order now and why, read fresh (ops routes:explain): no exploration roll. */
export async function explainRoute(db: Db, route: { mode: RouteMode; vendors: RoutedVendor[] }, method: RouteMethod, destination: string | null, policy: RoutingPolicy) {
  const [rows, demoted] = await Promise.all([readRecentOutcomes(db, policy.windowSeconds), demotedNow(db)]);
  const scores = scoreOutcomes(rows, policy.halfLifeSeconds, demoted);
  return chooseVendors(route, method, destination, scores, policy, () => 1);
}
