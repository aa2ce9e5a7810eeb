// webhook-deliver: delivery attempts of outbox rows, and their record.
//
// The body is the stored bytes (the same on every attempt); the signature headers are made
// fresh per attempt. Requests to one destination (a URL's origin) share a keep-alive connection
// pool, so a burst to one merchant reuses its connections instead of opening one per webhook.
// The URL is checked here by the create-time rules (IP-literal hosts are connected to without a
// lookup); names are then checked on the addresses they resolve to, inside the lookup each new
// connection uses.
//
// A batch of finished attempts is recorded in one transaction: one statement for every attempt
// row and its delivery's new state, the retries' jobs, and the completion of the batch's jobs.
// So a crash cannot lose a retry nor schedule it twice, and an attempt is recorded if and only
// if its job completes. A worker dying before that leaves the jobs to pg-boss's retry: delivery
// is at-least-once, and receivers dedupe on webhook-id (stable across attempts).
// workers/webhook-dispatch.ts decides which jobs run when.
import type { Job } from 'pg-boss';
import { Pool } from 'undici';
import { logger } from '../db/logger.ts';
import { webhookSecretOf } from '../db/merchants.ts';
import { webhookAttempts } from '../db/metrics.ts';
import { assertDestinationAllowed, BlockedDestination, guardedLookup } from '../db/notify-url.ts';
import { sql } from '../db/pool.ts';
import { inTransaction } from '../db/queue.ts';
import { signBody, standardWebhooksSignature } from '../db/signatures.ts';
import { deliveryJob, destinationOf, loadSendable, recordAttempts, WEBHOOK_QUEUE, type SendableRow } from '../db/webhooks.ts';
import type { WorkerContext } from './context.ts';

export function signatureHeaders(secret: string | null, id: string, timestamp: number, body: string): Record<string, string> {
  const headers: Record<string, string> = { 'webhook-id': id, 'webhook-timestamp': String(timestamp) };
  if (!secret) return headers;
  headers['x-signature'] = signBody(secret, body);
  headers['webhook-signature'] = standardWebhooksSignature(secret, id, timestamp, body);
  return headers;
}

/** A delivery ready to send: its row, its destination and its merchant's secret. */
export interface Sendable {
  row: SendableRow;
  destination: string;
  secret: string | null;
}

export interface AttemptResult {
  ok: boolean;
  /** Refused by the notify-URL rules (a private or loopback destination): never retried. */
  blocked: boolean;
  statusCode: number | null;
  error: string | null;
  latencyMs: number;
}

/** A fetched job and what became of it: an attempt's result, or nothing to send (`result` null). */
export interface Settled {
  job: Job<unknown>;
  sendable: Sendable | null;
  result: AttemptResult | null;
}

/**
 * The delivery path's statements look rows up by primary key, a batch of ids at a time (the
 * deliveries and their merchants, the attempt rows' deliveries, pg-boss's jobs), and their plans
 * must not depend on the statistics: a burst grows the job table and webhook_deliveries by
 * thousands of rows a second, autoanalyze comes at most once a minute, and on statistics from
 * before the burst the planner chose plans that read every row of a table per batch (measured:
 * a generic plan scanning the job table for each completion, 5-67 ms; a hash join over a
 * sequential scan of webhook_deliveries per batch of attempts; a skip scan of the merchant index
 * to load a batch). Inside these transactions only, each statement is planned for its own
 * parameters, and as a probe per id: no sequential scans, hash or merge joins.
 */
const PROBE_PLANS = sql.unsafe`
  select set_config('plan_cache_mode', 'force_custom_plan', true), set_config('enable_seqscan', 'off', true),
         set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true)`;

/** Opened webhook secrets by merchant, while their sealed bytes are unchanged. */
const secrets = new Map<string, { sealed: Buffer | null; secret: string | null }>();

function secretOf(ctx: WorkerContext, row: SendableRow): string | null {
  const known = secrets.get(row.merchant_id);
  const sealed = row.webhook_secret_enc;
  if (known && (known.sealed === sealed || (known.sealed && sealed && known.sealed.equals(sealed)))) return known.secret;
  if (secrets.size > 10_000) secrets.clear();
  const secret = webhookSecretOf(ctx.sealer, { id: row.merchant_id, webhook_secret_enc: sealed });
  secrets.set(row.merchant_id, { sealed, secret });
  return secret;
}

/**
 * The deliveries of a fetched batch, one read: by delivery id, those to send now. A delivery no
 * longer PENDING, or whose next attempt an operator's resend moved (a stale retry job), is
 * absent: its job only completes.
 */
export async function loadBatch(ctx: WorkerContext, deliveryIds: readonly string[]): Promise<Map<string, Sendable>> {
  const rows = await ctx.pool.transaction(async (tx) => {
    await tx.query(PROBE_PLANS);
    return loadSendable(tx, deliveryIds);
  });
  const due = Date.now() + 1000;
  const out = new Map<string, Sendable>();
  for (const row of rows) {
    if (row.status !== 'PENDING') continue;
    if (row.next_attempt_at && row.next_attempt_at.getTime() > due) continue;
    out.set(row.id, { row, destination: destinationOf(row.url), secret: secretOf(ctx, row) });
  }
  return out;
}

type Lookup = ReturnType<typeof guardedLookup>;

/**
 * Keep-alive connection pools (undici), one per destination, each holding at most `sockets`
 * connections (the dispatcher's limit of requests in flight to a destination). Every new
 * connection resolves its name through `lookup`, which refuses private addresses, and gives up
 * after `timeoutMs` (a request's own abort does not reach a connection still being opened). An
 * idle connection closes after a minute, or sooner when the receiver's Keep-Alive hint says it
 * will close it; pools unused for ten minutes are closed.
 */
export class DestinationPools {
  readonly #pools = new Map<string, { pool: Pool; lastUsed: number }>();
  readonly #sockets: number;
  readonly #lookup: Lookup;
  readonly #timeoutMs: number;
  #lastSweep = Date.now();

  constructor(sockets: number, lookup: Lookup, timeoutMs: number) {
    this.#sockets = sockets;
    this.#lookup = lookup;
    this.#timeoutMs = timeoutMs;
  }

  for(destination: string): Pool {
    const now = Date.now();
    if (now - this.#lastSweep > 60_000) this.#sweep(now);
    let held = this.#pools.get(destination);
    if (!held) {
      const pool = new Pool(destination, {
        connections: this.#sockets,
        keepAliveTimeout: 60_000,
        keepAliveMaxTimeout: 60_000,
        connect: { lookup: this.#lookup as never, timeout: this.#timeoutMs },
      });
      held = { pool, lastUsed: now };
      this.#pools.set(destination, held);
    }
    held.lastUsed = now;
    return held.pool;
  }

  #sweep(now: number) {
    this.#lastSweep = now;
    for (const [destination, held] of this.#pools) {
      if (now - held.lastUsed < 600_000) continue;
      void held.pool.destroy().catch(() => undefined);
      this.#pools.delete(destination);
    }
  }

  destroy() {
    for (const held of this.#pools.values()) void held.pool.destroy().catch(() => undefined);
    this.#pools.clear();
  }
}

/**
 * One POST: resolves with the answer's status once its body has been read (and dropped), so the
 * connection goes back to the pool. No redirects are followed; `timeoutMs` bounds the whole
 * exchange, connection included. undici rather than node:http (and got before it): this is the
 * delivery path's only HTTP call, and a POST through undici's pool costs about half the client
 * CPU of one through node:http's agent, a tenth of the worker's CPU per delivery in the webhook
 * bench (docs/decisions.md, "Webhook transport").
 */
async function post(pool: Pool, url: URL, headers: Record<string, string>, body: string, timeoutMs: number): Promise<number> {
  // A timer cleared when the exchange ends (AbortSignal.timeout's would outlive it: one per
  // delivery of a burst, each for the whole timeout).
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  const { signal } = abort;
  try {
    const response = await pool.request({ path: url.pathname + url.search, method: 'POST', headers, body, signal });
    // An answer's body is not read: past 128 KiB the connection is closed instead of drained.
    await response.body.dump({ limit: 128 * 1024, signal });
    return response.statusCode;
  } catch (err) {
    if (signal.aborted && !(err instanceof BlockedDestination)) throw new Error(`no answer within ${timeoutMs} ms`);
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/** One attempt: never throws; a refused destination, a timeout or a non-2xx is a failed result. */
export async function attempt(ctx: WorkerContext, pools: DestinationPools, d: Sendable): Promise<AttemptResult> {
  const started = performance.now();
  const { row } = d;
  try {
    assertDestinationAllowed(row.url, ctx.config.NOTIFY_URL_ALLOWLIST);
    const url = new URL(row.url);
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'Kasir-Webhooks/1.0',
      'x-kasir-event': row.event,
      // A sample (ops webhooks:trigger, POST /v1/webhook-deliveries/samples) says so in a header
      // too, so a receiver can drop it before parsing the body.
      ...(row.sample ? { 'x-kasir-sample': 'true' } : {}),
      ...signatureHeaders(d.secret, row.id, Math.floor(Date.now() / 1000), row.body),
    };
    const statusCode = await post(pools.for(d.destination), url, headers, row.body, ctx.config.WEBHOOK_TIMEOUT_MS);
    const ok = statusCode >= 200 && statusCode < 300;
    return { ok, blocked: false, statusCode, error: ok ? null : `HTTP ${statusCode}`, latencyMs: performance.now() - started };
  } catch (err) {
    // The guarded DNS lookup refuses a name that resolves to a private address: its error is the cause.
    const cause = (err as { cause?: unknown }).cause;
    const blocked = err instanceof BlockedDestination || cause instanceof BlockedDestination;
    const message = blocked ? `blocked destination: ${(cause instanceof BlockedDestination ? cause : (err as Error)).message}` : (err as Error).message;
    return { ok: false, blocked, statusCode: null, error: message.slice(0, 500), latencyMs: performance.now() - started };
  }
}

/**
 * Records a batch of settled jobs in one transaction: their attempts (one statement), the next
 * attempt's job of each failed one whose schedule goes on, and the completion of every job of
 * the batch. A delivery must appear at most once in a batch.
 */
export async function recordBatch(ctx: WorkerContext, batch: readonly Settled[]): Promise<void> {
  const schedule = ctx.config.WEBHOOK_RETRY_SCHEDULE;
  const attempted = batch.filter((s): s is Settled & { sendable: Sendable; result: AttemptResult } => s.sendable !== null && s.result !== null);
  // A destination Kasir refuses to contact stays refused on every retry: the delivery fails at
  // once with the reason (after the URL is fixed, webhooks:resend sends it again).
  const retryIn = (s: (typeof attempted)[number]) => (s.result.ok || s.result.blocked ? null : (schedule[s.sendable.row.attempts] ?? null));
  const retries = attempted.filter((s) => retryIn(s) !== null);
  const attempts = await ctx.pool.transaction(async (tx) => {
    await tx.query(PROBE_PLANS);
    const recorded = await recordAttempts(
      tx,
      attempted.map((s) => ({ deliveryId: s.sendable.row.id, ...s.result, retryInSeconds: retryIn(s) })),
    );
    if (retries.length) await ctx.boss.insert(WEBHOOK_QUEUE, retries.map((s) => deliveryJob(s.sendable.row.id, s.sendable.row.url, retryIn(s)!)), { db: inTransaction(tx) });
    await ctx.boss.complete(WEBHOOK_QUEUE, batch.map((s) => ({ id: s.job.id, retryCount: s.job.retryCount })), null, { db: inTransaction(tx) });
    return recorded;
  });
  for (const s of attempted) {
    const next = retryIn(s);
    webhookAttempts.inc({ outcome: s.result.ok ? 'delivered' : next !== null ? 'retrying' : 'exhausted' });
    if (!s.result.ok) logger.info({ delivery: s.sendable.row.id, attempts: attempts.get(s.sendable.row.id), error: s.result.error, retryIn: next }, 'webhook attempt failed');
  }
}
