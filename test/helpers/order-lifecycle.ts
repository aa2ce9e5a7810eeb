// Helpers for the payment, webhook and expiry tests: V1 order calls as a merchant makes them,
// the ops CLI as an operator runs it, webhook signatures checked the way a merchant's receiver
// checks them (X-Signature computed here from the spec, webhook-signature with the stock
// Standard Webhooks library, never with Kasir's own signing code), and a tap on the in-process
// API server that records every vendor callback Kasir answered.
import { createHmac } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { sql } from '../../db/pool.ts';
import { call, eventually, type TestResponse } from './http.ts';
import type { Stack } from './stack.ts';
import type { ReceivedCallback } from './simulator.ts';
import { ops } from './processes.ts';

export { ops };

export const ISO_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/;

export interface Merchant {
  api_key: string;
  merchant_id: string;
  webhook_secret: string | null;
}

/** X-Signature as spec 5.2 tells a merchant: HMAC-SHA256 keyed with the secret string (UTF-8) as given. */
export function xSignature(secret: string, body: Buffer | string): string {
  return `sha256=${createHmac('sha256', Buffer.from(secret, 'utf8')).update(body).digest('hex')}`;
}

/**
 * A stock Standard Webhooks verifier for the secret: a `whsec_` secret as the standard defines
 * it (base64 key after the prefix); any other secret as raw key bytes (`format: "raw"`).
 */
export function standardWebhook(secret: string): Webhook {
  return secret.startsWith('whsec_') ? new Webhook(secret) : new Webhook(secret, { format: 'raw' });
}

/** POST /v1/orders, signed when the merchant has a webhook secret (spec 5.2). */
export function createOrder(stack: Stack, merchant: Merchant, body: Record<string, unknown>): Promise<TestResponse> {
  const raw = JSON.stringify({ payment_method: 'QRIS', ...body });
  const headers: Record<string, string> = { 'x-api-key': merchant.api_key };
  if (merchant.webhook_secret) headers['x-signature'] = xSignature(merchant.webhook_secret, raw);
  return call(stack.api.url, { path: '/v1/orders', headers, body: raw });
}

export async function getOrder(stack: Stack, merchant: Merchant, ref: string) {
  const res = await call(stack.api.url, { path: `/v1/orders/${ref}`, headers: { 'x-api-key': merchant.api_key } });
  if (res.status !== 200) throw new Error(`GET /v1/orders/${ref}: ${res.status} ${res.text}`);
  return res.json.data;
}

export async function getEvents(stack: Stack, merchant: Merchant, ref: string): Promise<Array<{ status: string; event: string; source: string; late: boolean; created_at: string }>> {
  const res = await call(stack.api.url, { path: `/v1/orders/${ref}/events`, headers: { 'x-api-key': merchant.api_key } });
  if (res.status !== 200) throw new Error(`GET /v1/orders/${ref}/events: ${res.status} ${res.text}`);
  return res.json.data;
}

/** Polls the order through the API until it has `status`. */
export function orderReaches(stack: Stack, merchant: Merchant, ref: string, status: string, deadlineMs = 10_000) {
  return eventually(
    async () => {
      const order = await getOrder(stack, merchant, ref);
      return order.status === status ? order : undefined;
    },
    `order ${ref} to become ${status}`,
    deadlineMs,
  );
}

/** Moves an order's deadline into the past, as if its lifetime had elapsed. */
export async function makeOverdue(stack: Stack, refs: string[]): Promise<void> {
  await stack.api.ctx.pool.query(sql.unsafe`
    update orders set expires_at = now() - interval '1 second'
    where ref_code = any(${sql.array(refs, 'text')})`);
}

export interface DeliveryView {
  id: string;
  event: string;
  url: string;
  status: 'PENDING' | 'DELIVERED' | 'FAILED';
  attempts: Array<{ attempt: number; status_code: number | null; latency_ms: number; error: string | null; created_at: string }>;
}

export async function listDeliveries(env: Record<string, string>, ref: string): Promise<DeliveryView[]> {
  const res = await ops(env, 'webhooks:list', '--ref', ref, '--json');
  if (res.code !== 0) throw new Error(`webhooks:list failed (${res.code}): ${res.stderr}${res.stdout}`);
  return JSON.parse(res.stdout).deliveries;
}

/**
 * What a merchant's receiver verifies: X-Signature over the raw bytes and the Standard Webhooks
 * signature over "id.timestamp.body". Returns the problems found (empty when all verify).
 */
export function webhookSignatureProblems(received: ReceivedCallback, secret: string): string[] {
  const problems: string[] = [];
  const h = received.headers;
  if (h['x-signature'] !== xSignature(secret, received.body)) problems.push(`x-signature ${String(h['x-signature'])} does not verify`);
  const id = h['webhook-id'];
  const timestamp = h['webhook-timestamp'];
  const signature = h['webhook-signature'];
  if (typeof id !== 'string' || id.length === 0) problems.push('webhook-id missing');
  if (typeof timestamp !== 'string' || !/^\d+$/.test(timestamp)) problems.push('webhook-timestamp missing or not unix seconds');
  else if (Math.abs(Date.now() / 1000 - Number(timestamp)) > 60) problems.push(`webhook-timestamp ${timestamp} is not current`);
  if (typeof signature !== 'string') {
    problems.push('webhook-signature missing');
  } else {
    try {
      standardWebhook(secret).verify(received.body.toString('utf8'), { 'webhook-id': String(id), 'webhook-timestamp': String(timestamp), 'webhook-signature': signature });
    } catch (err) {
      problems.push(`webhook-signature ${signature} does not verify (${(err as Error).message})`);
    }
  }
  return problems;
}

export interface TappedCallback {
  path: string;
  status: number;
  body: Buffer;
  json: any;
}

/**
 * Records every request to /callbacks/* that the in-process API answered (status and the raw
 * bytes the vendor sent), by listening beside the app on the server's 'request' event.
 */
export function tapCallbacks(stack: Stack): { answered: TappedCallback[]; forReference(ref: string): TappedCallback[]; stop(): void } {
  const answered: TappedCallback[] = [];
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    if (!req.url?.startsWith('/callbacks/')) return;
    res.on('finish', () => {
      const body: Buffer = (req as IncomingMessage & { rawBody?: Buffer }).rawBody ?? Buffer.alloc(0);
      let json: unknown = null;
      try {
        json = JSON.parse(body.toString('utf8'));
      } catch {}
      answered.push({ path: req.url!, status: res.statusCode, body, json });
    });
  };
  stack.api.server.on('request', listener);
  return {
    answered,
    forReference: (ref) => answered.filter((c) => c.json?.reference === ref),
    stop: () => stack.api.server.off('request', listener),
  };
}

/** Headers of a callback signed as the simulator signs it (docs/simulator.md, "Signing"). */
export function simulatorSignature(secret: string, body: Buffer | string, timestamp = Math.floor(Date.now() / 1000)): Record<string, string> {
  const ts = String(timestamp);
  return {
    'x-sim-timestamp': ts,
    'x-sim-signature': createHmac('sha256', secret).update(`${ts}.`).update(body).digest('hex'),
  };
}
