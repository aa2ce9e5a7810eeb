// webhook-deliver: delivery attempts of outbox rows, and their record.
//
// The body is the stored bytes (the same on every attempt); the signature headers are made
// fresh per attempt. Requests to one destination (a URL's origin) share a keep-alive agent, so
// a burst to one merchant reuses its connections instead of opening one per webhook. The URL is
// checked here by the create-time rules (IP-literal hosts are connected to without a lookup);
// names are then checked on the addresses they resolve to, inside the lookup each new
// connection uses.
//
// A batch of finished attempts is recorded in one transaction: one statement for every attempt
// row and its delivery's new state, the retries' jobs, and the completion of the batch's jobs.
// So a crash cannot lose a retry nor schedule it twice, and an attempt is recorded if and only
// if its job completes. A worker dying before that leaves the jobs to pg-boss's retry: delivery
// is at-least-once, and receivers dedupe on webhook-id (stable across attempts).
// workers/webhook-dispatch.ts decides which jobs run when.
import { Agent as HttpAgent, request as httpRequest, type OutgoingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Job } from 'pg-boss';
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

interface Agents {
  http: HttpAgent;
  https: HttpsAgent;
  lastUsed: number;
}

/**
 * Keep-alive agents, one per destination, each holding at most `sockets` connections (the
 * dispatcher's limit of requests in flight to a destination). Idle connections close after a
 * minute; agents unused for ten minutes are dropped.
 */
export class DestinationAgents {
  readonly #agents = new Map<string, Agents>();
  readonly #sockets: number;
  #lastSweep = Date.now();

  constructor(sockets: number) {
    this.#sockets = sockets;
  }

  for(destination: string): { http: HttpAgent; https: HttpsAgent } {
    const now = Date.now();
    if (now - this.#lastSweep > 60_000) this.#sweep(now);
    let agents = this.#agents.get(destination);
    if (!agents) {
      const options = { keepAlive: true, maxSockets: this.#sockets, maxFreeSockets: this.#sockets, timeout: 60_000, scheduling: 'lifo' as const };
      agents = { http: new HttpAgent(options), https: new HttpsAgent(options), lastUsed: now };
      this.#agents.set(destination, agents);
    }
    agents.lastUsed = now;
    return { http: agents.http, https: agents.https };
  }

  #sweep(now: number) {
    this.#lastSweep = now;
    for (const [destination, agents] of this.#agents) {
      if (now - agents.lastUsed < 600_000) continue;
      agents.http.destroy();
      agents.https.destroy();
      this.#agents.delete(destination);
    }
  }

  destroy() {
    for (const agents of this.#agents.values()) {
      agents.http.destroy();
      agents.https.destroy();
    }
    this.#agents.clear();
  }
}

/**
 * One POST: resolves with the answer's status once its body has been read (and dropped), so the
 * connection goes back to the agent. No redirects are followed; `timeoutMs` bounds the whole
 * exchange, connection included. node:http rather than got: this is the delivery path's only
 * HTTP call and got's per-request work (options, hooks, its stream wrapper) was a third of the
 * webhook worker's CPU in a burst.
 */
function post(url: URL, agent: HttpAgent, headers: OutgoingHttpHeaders, body: string, timeoutMs: number, lookup: ReturnType<typeof guardedLookup>): Promise<number> {
  return new Promise((resolve, reject) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const request = send(url, { method: 'POST', agent, headers, lookup: lookup as never }, (response) => {
      response.on('error', reject);
      response.on('end', () => resolve(response.statusCode ?? 0));
      response.resume();
    });
    const timer = setTimeout(() => request.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    request.on('error', reject);
    request.on('close', () => clearTimeout(timer));
    request.end(body);
  });
}

/** One attempt: never throws; a refused destination, a timeout or a non-2xx is a failed result. */
export async function attempt(ctx: WorkerContext, agents: DestinationAgents, d: Sendable): Promise<AttemptResult> {
  const started = performance.now();
  const { row } = d;
  try {
    assertDestinationAllowed(row.url, ctx.config.NOTIFY_URL_ALLOWLIST);
    const url = new URL(row.url);
    const pair = agents.for(d.destination);
    const headers = {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(row.body),
      'user-agent': 'Kasir-Webhooks/1.0',
      'x-kasir-event': row.event,
      // A sample (ops webhooks:trigger, POST /v1/webhook-deliveries/samples) says so in a header
      // too, so a receiver can drop it before parsing the body.
      ...(row.sample ? { 'x-kasir-sample': 'true' } : {}),
      ...signatureHeaders(d.secret, row.id, Math.floor(Date.now() / 1000), row.body),
    };
    const statusCode = await post(url, url.protocol === 'https:' ? pair.https : pair.http, headers, row.body, ctx.config.WEBHOOK_TIMEOUT_MS, lookupOf(ctx));
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

const lookups = new WeakMap<readonly string[], ReturnType<typeof guardedLookup>>();
function lookupOf(ctx: WorkerContext) {
  const allowlist = ctx.config.NOTIFY_URL_ALLOWLIST;
  let lookup = lookups.get(allowlist);
  if (!lookup) lookups.set(allowlist, (lookup = guardedLookup(allowlist)));
  return lookup;
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
