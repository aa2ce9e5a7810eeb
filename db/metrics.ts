// Prometheus metrics of every Kasir process: one registry, the metrics, and the operator-only
// listener that serves them (METRICS_PORT, off by default; never the merchant-facing port).
//
// It lives in db/ because db/ is what api/ and workers/ both import, and the counters that
// matter most (orders, ledger) are bumped by db/'s service functions.
//
// - Counters are per process and start at zero with it; Prometheus adds them up across
//   processes (sum(rate(...))). Business counters move only after the change committed
//   (afterCommit), so a rolled-back transaction counts nothing.
// - The database gauges (queue depth and age, rows waiting in a watched state) are facts about
//   the shared database, read on a scrape and cached for DATABASE_GAUGE_TTL_MS: every process
//   reports the same values, so aggregate them with max, never sum. When the read fails they are
//   left out of that scrape (and the failure logged) rather than shown stale.
// - Recording is a few map lookups and additions: nothing here touches the database or the
//   network on a request's path.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Config } from './config.ts';
import { logger } from './logger.ts';
import { readQueueGauges, readStateGauges, type QueueGaugeRow, type StateGaugeRow } from './metrics.sql.ts';
import { readOpenDifferenceGauges, type OpenDifferenceGaugeRow } from './recon.sql.ts';
import { currentScores, routingPolicy, type RoutingPolicy, type VendorScore } from './routing.ts';
import { wasRefused, type Db, type Pool, type Tx } from './pool.ts';

export const registry = new Registry();

// ---------------------------------------------------------------- HTTP (API processes)

const httpRequestDuration = new Histogram({
  name: 'kasir_http_request_duration_seconds',
  help: 'API requests answered, by method, Express route pattern ("unmatched" when no route took the request) and status',
  labelNames: ['method', 'route', 'status'] as const,
  // POST /v1/orders may wait ORDER_CREATE_DEADLINE_MS (10 s) for the vendor worker.
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [registry],
});

type Observe = (seconds: number) => void;
const httpSeries = new Map<string, Map<string, Map<number, Observe>>>();

/**
 * Records one answered request. `route` must be a pattern (`/v1/orders/:ref_code`), never the
 * raw path: every distinct value is a time series. Series are looked up by nested maps, so a
 * request allocates no label object once its combination has been seen.
 */
export function observeHttpRequest(method: string, route: string, status: number, seconds: number): void {
  let byMethod = httpSeries.get(route);
  if (!byMethod) httpSeries.set(route, (byMethod = new Map()));
  let byStatus = byMethod.get(method);
  if (!byStatus) byMethod.set(method, (byStatus = new Map()));
  let observe = byStatus.get(status);
  if (!observe) byStatus.set(status, (observe = httpRequestDuration.labels(method, route, String(status)).observe));
  observe(seconds);
}

// ---------------------------------------------------------------- orders

export const ordersCreated = new Counter({
  name: 'kasir_orders_created_total',
  help: 'Orders that got a vendor QR (CREATING → PENDING, or paid before the create call returned)',
  registers: [registry],
});

export const ordersPaid = new Counter({
  name: 'kasir_orders_paid_total',
  help: 'Orders paid; late="true": paid after Kasir had expired or given up on them (money received, recorded)',
  labelNames: ['late'] as const,
  registers: [registry],
});

export const ordersExpired = new Counter({
  name: 'kasir_orders_expired_total',
  help: 'PENDING orders expired by the scheduler sweep',
  registers: [registry],
});

export const orderAttemptsFailed = new Counter({
  name: 'kasir_order_attempts_failed_total',
  help: 'Create attempts that got no QR: NO_VENDOR (none routed) or VENDOR_ERROR (every routed vendor refused)',
  labelNames: ['reason'] as const,
  registers: [registry],
});

// ---------------------------------------------------------------- vendors, webhooks, ledger

const vendorCallDuration = new Histogram({
  name: 'kasir_vendor_call_duration_seconds',
  help: 'Gateway calls by vendor code, operation and outcome (ok; failed: surely not acted on; unknown: may have been). _count is the calls by outcome',
  labelNames: ['vendor', 'operation', 'outcome'] as const,
  buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

export function observeVendorCall(vendor: string, operation: string, outcome: 'ok' | 'failed' | 'unknown', seconds: number): void {
  vendorCallDuration.observe({ vendor, operation, outcome }, seconds);
}

/** How a caller authenticated (or failed to): V1 key, legacy SHA-512 signature, legacy RSA, vendor callback. */
export type AuthScheme = 'api_key' | 'legacy_signature' | 'legacy_rsa' | 'callback';

const authRefusals = new Counter({
  name: 'kasir_auth_refusals_total',
  help: 'Refused authentications by scheme: invalid (wrong key or signature) or throttled (429, too many failures from the address)',
  labelNames: ['scheme', 'reason'] as const,
  registers: [registry],
});

export function observeAuthRefusal(scheme: AuthScheme, reason: 'invalid' | 'throttled'): void {
  authRefusals.inc({ scheme, reason });
}

const vendorRateLimited = new Counter({
  name: 'kasir_vendor_rate_limited_total',
  help: 'Vendor answers of HTTP 429 (the vendor did nothing; the call counts as failed), by vendor code',
  labelNames: ['vendor'] as const,
  registers: [registry],
});

export function observeVendorRateLimited(vendor: string): void {
  vendorRateLimited.inc({ vendor });
}

export const qrRenders = new Counter({
  name: 'kasir_qr_renders_total',
  help: 'QR images rendered by this API process (each token once while it stays among the images kept)',
  registers: [registry],
});

const vendorConflicts = new Counter({
  name: 'kasir_vendor_conflicts_total',
  help: "Vendor words recorded and not applied (ops vendor:conflicts), by the vendor's code and kind: NOT_ITS_RECORD (about a record another vendor holds), CONTRADICTION (a final word against Kasir's final state) or UNCONFIRMED (a payment callback the vendor's own read of the order's QR did not confirm)",
  labelNames: ['vendor', 'kind'] as const,
  registers: [registry],
});

export function observeVendorConflict(vendor: string, kind: 'NOT_ITS_RECORD' | 'CONTRADICTION' | 'UNCONFIRMED'): void {
  vendorConflicts.inc({ vendor, kind });
}

export const webhookAttempts = new Counter({
  name: 'kasir_webhook_attempts_total',
  help: 'Webhook delivery attempts: delivered (2xx), retrying (failed, another attempt scheduled), exhausted (failed, no attempt left: the delivery is FAILED)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

const ledgerTransfers = new Counter({
  name: 'kasir_ledger_transfers_total',
  help: 'Ledger transfers committed by this process, by kind',
  labelNames: ['kind'] as const,
  registers: [registry],
});

/** Counts `n` transfers of `kind` once the transaction that wrote them commits. */
export function countLedgerTransfers(tx: Db, kind: string, n = 1): void {
  afterCommit(tx, () => ledgerTransfers.inc({ kind }, n));
}

// Series with known labels exist at 0 from the start, so rate() and alerts see the first event.
ordersPaid.inc({ late: 'false' }, 0);
ordersPaid.inc({ late: 'true' }, 0);
for (const reason of ['NO_VENDOR', 'VENDOR_ERROR']) orderAttemptsFailed.inc({ reason }, 0);
for (const outcome of ['delivered', 'retrying', 'exhausted']) webhookAttempts.inc({ outcome }, 0);

// ---------------------------------------------------------------- after commit

const pendingByTx = new WeakMap<object, Array<() => void>>();

/**
 * Runs `fn` once `db`'s transaction commits, and never if it rolls back (slonik retries a
 * transaction with a fresh connection object, so a retried attempt counts once). Outside a
 * transaction (the pool: the statement has committed) it runs at once. Savepoints are not
 * tracked: Kasir opens none.
 */
export function afterCommit(db: Db, fn: () => void): void {
  const tx = db as Partial<Tx>;
  if (typeof tx.transactionId !== 'string' || typeof tx.once !== 'function') return fn();
  let pending = pendingByTx.get(tx);
  if (!pending) {
    const fns: Array<() => void> = [];
    pendingByTx.set(tx, (pending = fns));
    const committed = () => {
      tx.off!('rollback', rolledBack);
      // A refusal rolled back by db/pool.ts still ends in slonik's (empty) COMMIT.
      if (wasRefused(tx)) return;
      for (const f of fns) f();
    };
    const rolledBack = () => tx.off!('commit', committed);
    tx.once('commit', committed);
    tx.once('rollback', rolledBack);
  }
  pending.push(fn);
}

// ---------------------------------------------------------------- database gauges (on scrape)

/** Scrapes of every process share one read per interval: the figures move slower than that matters. */
const DATABASE_GAUGE_TTL_MS = 5_000;

interface DatabaseFacts {
  queues: readonly QueueGaugeRow[];
  states: readonly StateGaugeRow[];
  differences: readonly OpenDifferenceGaugeRow[];
}

let databasePool: Pool | null = null;
let cached: { at: number; facts: Promise<DatabaseFacts | null> } | null = null;

function databaseFacts(): Promise<DatabaseFacts | null> {
  if (!databasePool) return Promise.resolve(null);
  if (cached && Date.now() - cached.at < DATABASE_GAUGE_TTL_MS) return cached.facts;
  const pool = databasePool;
  const facts = Promise.all([readQueueGauges(pool), readStateGauges(pool), readOpenDifferenceGauges(pool)]).then(
    ([queues, states, differences]) => ({ queues, states, differences }),
    (err) => {
      logger.warn({ err }, 'metrics: database gauges unavailable for this scrape');
      return null;
    },
  );
  cached = { at: Date.now(), facts };
  return facts;
}

new Gauge({
  name: 'kasir_queue_jobs',
  help: 'Jobs per pg-boss queue: ready (due, waiting for a worker) and deferred (scheduled later) counted on scrape; active and failed (retained) as of pg-boss\'s last monitor pass. Same in every process: aggregate with max',
  labelNames: ['queue', 'state'] as const,
  registers: [registry],
  async collect() {
    const facts = await databaseFacts();
    this.reset();
    for (const q of facts?.queues ?? []) {
      this.set({ queue: q.name, state: 'ready' }, q.ready);
      this.set({ queue: q.name, state: 'deferred' }, q.deferred);
      this.set({ queue: q.name, state: 'active' }, q.active);
      this.set({ queue: q.name, state: 'failed' }, q.failed);
    }
  },
});

new Gauge({
  name: 'kasir_queue_oldest_ready_job_age_seconds',
  help: 'How long the oldest due job of each queue has waited for a worker (0 when none waits). Same in every process: aggregate with max',
  labelNames: ['queue'] as const,
  registers: [registry],
  async collect() {
    const facts = await databaseFacts();
    this.reset();
    for (const q of facts?.queues ?? []) this.set({ queue: q.name }, q.oldest_ready_seconds);
  },
});

new Gauge({
  name: 'kasir_rows_in_state',
  help: 'Rows in a watched state: orders CREATING, disbursements ON_PROCESS, refunds PENDING, settlements PENDING/PROCESSING/FAILED, and refunds/disbursements/settlements UNRESOLVED (waiting for an operator: ops unresolved:list). Same in every process: aggregate with max',
  labelNames: ['table', 'status'] as const,
  registers: [registry],
  async collect() {
    const facts = await databaseFacts();
    this.reset();
    for (const s of facts?.states ?? []) this.set({ table: s.table, status: s.status }, s.count);
  },
});

new Gauge({
  name: 'kasir_rows_in_state_oldest_age_seconds',
  help: 'Seconds since the oldest row in a watched state last changed (0 when there is none). Same in every process: aggregate with max',
  labelNames: ['table', 'status'] as const,
  registers: [registry],
  async collect() {
    const facts = await databaseFacts();
    this.reset();
    for (const s of facts?.states ?? []) this.set({ table: s.table, status: s.status }, s.oldest_age_seconds);
  },
});

new Gauge({
  name: 'kasir_recon_open_differences',
  help: 'Reconciliation differences waiting for a person, by vendor and kind (0 for each kind of every vendor reconciled at least once). Same in every process: aggregate with max',
  labelNames: ['vendor', 'kind'] as const,
  registers: [registry],
  async collect() {
    const facts = await databaseFacts();
    this.reset();
    for (const d of facts?.differences ?? []) this.set({ vendor: d.vendor, kind: d.kind }, d.count);
  },
});

// ---------------------------------------------------------------- routing scores (db/routing.ts)

let routing: RoutingPolicy | null = null;

/** The method-wide scores of the routing window, as this process's routing sees them (cached). */
async function methodScores(): Promise<VendorScore[]> {
  if (!databasePool || !routing) return [];
  const scores = await currentScores(databasePool, routing);
  return [...scores.values()].filter((s) => s.destination === '');
}

const routingGauge = (name: string, help: string, value: (s: VendorScore) => number | null) =>
  new Gauge({
    name,
    help: `${help}, over the last ROUTING_WINDOW_SECONDS (QR creates and payouts sent), by vendor and method. Same in every process: aggregate with max`,
    labelNames: ['vendor', 'method'] as const,
    registers: [registry],
    async collect() {
      const scores = await methodScores();
      this.reset();
      for (const s of scores) {
        const v = value(s);
        if (v !== null) this.set({ vendor: s.vendor, method: s.method }, v);
      }
    },
  });

routingGauge('kasir_vendor_route_success_ratio', 'Part of the calls the vendor did (ok)', (s) => s.successRatio);
routingGauge('kasir_vendor_route_unknown_ratio', 'Part of the calls that ended unknown (timeout, 5xx: reconciled at that vendor)', (s) => s.unknownRatio);
routingGauge('kasir_vendor_route_latency_p95_seconds', 'Upper bound of the latency cell holding the 95th percentile (absent when past 10 s)', (s) => (s.p95Ms === null ? null : s.p95Ms / 1000));
routingGauge('kasir_vendor_route_share', "The vendor's part of all the method's calls", (s) => s.share);

// ---------------------------------------------------------------- retention (db/retention.ts)

export const retentionRowsRetired = new Counter({
  name: 'kasir_retention_rows_retired_total',
  help: 'Operational rows retired by the retention pass (scheduler, or ops retention:run in its own process): webhook_attempts (by partition drops), webhook_deliveries, vendor_callback_payloads (payload dropped, key kept), vendor_callback_keys',
  labelNames: ['kind'] as const,
  registers: [registry],
});

export const retentionPartitionsDropped = new Counter({
  name: 'kasir_retention_partitions_dropped_total',
  help: 'Monthly partitions dropped by the retention pass, by table',
  labelNames: ['table'] as const,
  registers: [registry],
});

export const retentionOldestKept = new Gauge({
  name: 'kasir_retention_oldest_kept_timestamp_seconds',
  help: 'The cut-off of the last retention pass of this process, by kind (Unix time): what ended or came before it has been retired',
  labelNames: ['kind'] as const,
  registers: [registry],
});

// ---------------------------------------------------------------- reads from a replica

export const exportBuilds = new Counter({
  name: 'kasir_export_builds_total',
  help: 'Export builds by where their rows were read: replica, or primary (no replica, or it had not caught up within DATABASE_REPLICA_MAX_LAG_MS)',
  labelNames: ['source'] as const,
  registers: [registry],
});

export const replicaFresh = new Gauge({
  name: 'kasir_replica_fresh',
  help: '1 while this process reads lagging queries from DATABASE_REPLICA_URL, 0 while they go to the primary (the replica lags past DATABASE_REPLICA_MAX_LAG_MS or is unreachable); absent without a replica',
  registers: [registry],
});

// ---------------------------------------------------------------- the listener

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

let defaultMetrics = false;

/**
 * Serves GET /metrics on METRICS_HOST (else HOST):METRICS_PORT, with the process's default
 * metrics and, given a pool, the database gauges. Returns null when METRICS_PORT is unset.
 * Nothing else is served there, and nothing of the API: access is by network (bind it where
 * only Prometheus reaches), never by a merchant's API key.
 */
export async function startMetricsServer(config: Config, pool: Pool | null): Promise<MetricsServer | null> {
  if (config.METRICS_PORT === undefined) return null;
  if (!defaultMetrics) {
    collectDefaultMetrics({ register: registry });
    defaultMetrics = true;
  }
  databasePool = pool;
  routing = routingPolicy(config);
  const server = createServer((req, res) => {
    const path = req.url?.split('?', 1)[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (err) => {
        logger.error({ err }, 'metrics: scrape failed');
        res.writeHead(500, { 'content-type': 'text/plain' }).end('scrape failed\n');
      },
    );
  });
  const host = config.METRICS_HOST ?? config.HOST;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.METRICS_PORT, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  logger.info({ host, port }, 'metrics listening');
  return {
    port,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
