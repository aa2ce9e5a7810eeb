// webhook-deliver: one delivery attempt of an outbox row.
//
// The body is the stored bytes (the same on every attempt); the signature headers are made
// fresh per attempt. The attempt's record and the next attempt's job are written in one
// transaction, so a crash cannot lose the retry nor schedule it twice. A worker dying
// mid-request leaves the job to pg-boss's retry: delivery is at-least-once, and receivers
// dedupe on webhook-id (stable across attempts). The URL is checked here by the create-time rules
// (IP-literal hosts are connected to without a lookup); names are then checked on the addresses
// they resolve to, inside the lookup the connection uses.
import got from 'got';
import { logger } from '../db/logger.ts';
import { getMerchant, webhookSecretOf } from '../db/merchants.ts';
import { webhookAttempts } from '../db/metrics.ts';
import { assertDestinationAllowed, BlockedDestination, guardedLookup } from '../db/notify-url.ts';
import { inTransaction, sendJob } from '../db/queue.ts';
import { findDelivery, recordAttempt, type DeliveryRow } from '../db/webhooks.ts';
import { signBody, standardWebhooksSignature } from '../db/signatures.ts';
import type { WorkerContext } from './context.ts';

export function signatureHeaders(secret: string | null, id: string, timestamp: number, body: string): Record<string, string> {
  const headers: Record<string, string> = { 'webhook-id': id, 'webhook-timestamp': String(timestamp) };
  if (!secret) return headers;
  headers['x-signature'] = signBody(secret, body);
  headers['webhook-signature'] = standardWebhooksSignature(secret, id, timestamp, body);
  return headers;
}

async function attempt(ctx: WorkerContext, delivery: DeliveryRow, secret: string | null) {
  const started = performance.now();
  try {
    assertDestinationAllowed(delivery.url, ctx.config.NOTIFY_URL_ALLOWLIST);
    const response = await got.post(delivery.url, {
      body: delivery.body,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'Kasir-Webhooks/1.0',
        'x-kasir-event': delivery.event,
        ...signatureHeaders(secret, delivery.id, Math.floor(Date.now() / 1000), delivery.body),
      },
      timeout: { request: ctx.config.WEBHOOK_TIMEOUT_MS },
      retry: { limit: 0 },
      throwHttpErrors: false,
      followRedirect: false,
      dnsLookup: guardedLookup(ctx.config.NOTIFY_URL_ALLOWLIST) as never,
    });
    const ok = response.statusCode >= 200 && response.statusCode < 300;
    return { ok, blocked: false, statusCode: response.statusCode, error: ok ? null : `HTTP ${response.statusCode}`, latencyMs: performance.now() - started };
  } catch (err) {
    const cause = (err as { cause?: unknown }).cause;
    const blocked = err instanceof BlockedDestination || cause instanceof BlockedDestination;
    const message = blocked ? `blocked destination: ${(cause as Error | undefined)?.message ?? (err as Error).message}` : (err as Error).message;
    return { ok: false, blocked, statusCode: null, error: message.slice(0, 500), latencyMs: performance.now() - started };
  }
}

export async function handleWebhookDeliver(ctx: WorkerContext, payload: { delivery_id: string }) {
  const delivery = await findDelivery(ctx.pool, payload.delivery_id);
  if (!delivery || delivery.status !== 'PENDING') return { skipped: delivery?.status ?? 'missing' };
  // A retry job made stale by an operator's resend (which moved next_attempt_at) stands down.
  if (delivery.next_attempt_at && delivery.next_attempt_at.getTime() > Date.now() + 1000) return { skipped: 'not due' };
  const secret = webhookSecretOf(ctx.sealer, await getMerchant(ctx.pool, delivery.merchant_id));
  const result = await attempt(ctx, delivery, secret);
  // A destination Kasir refuses to contact stays refused on every retry: the delivery fails at
  // once with the reason (after the URL is fixed, webhooks:resend sends it again).
  const retryIn = result.ok || result.blocked ? null : (ctx.config.WEBHOOK_RETRY_SCHEDULE[delivery.attempts] ?? null);
  const attempts = await ctx.pool.transaction(async (tx) => {
    const n = await recordAttempt(tx, {
      deliveryId: delivery.id,
      ok: result.ok,
      statusCode: result.statusCode,
      latencyMs: Math.round(result.latencyMs),
      error: result.error,
      retryInSeconds: retryIn,
    });
    if (retryIn !== null) await sendJob(ctx.boss, 'webhook-deliver', { delivery_id: delivery.id }, { startAfter: retryIn, db: inTransaction(tx) });
    return n;
  });
  webhookAttempts.inc({ outcome: result.ok ? 'delivered' : retryIn !== null ? 'retrying' : 'exhausted' });
  if (!result.ok) logger.info({ delivery: delivery.id, attempts, error: result.error, retryIn }, 'webhook attempt failed');
  return { ok: result.ok, attempts, status_code: result.statusCode };
}
