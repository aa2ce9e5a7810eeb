// Helpers for the V1 order tests (test/orders/v1-create.test.ts, v1-read.test.ts): calls to
// the order endpoints, shape checks of an Order, and two ways of counting what happened
// behind the API (order attempts in the database, createQris calls at the simulator).
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { sql } from '../../db/pool.ts';
import { call, type TestResponse } from './http.ts';
import { clearFaults, setFaults } from './simulator.ts';
import type { Stack } from './stack.ts';

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const REF_CODE = /^ORD-\d+-[0-9A-Z]+$/;
export const ISO_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;

/** The V1 order fields: spec 2.2 plus the extras DESIGN section 6 decides, checkout_url (issue 13), refunded and refundable amounts (issue 22). */
export const ORDER_FIELDS = [
  'id',
  'ref_code',
  'merchant_order_id',
  'amount',
  'refunded_amount',
  'refundable_amount',
  'status',
  'qris_string',
  'qr_url',
  'checkout_url',
  'expires_at',
  'paid_at',
  'is_settled',
  'vendor_rrn',
  'customer_name',
  'customer_phone',
  'created_at',
  'metadata',
  'customer_email',
  'notify_url',
  'return_url',
].sort();

export function uniqueId(prefix = 'INV'): string {
  return `${prefix}-${randomBytes(6).toString('hex')}`;
}

export function isIsoZ(value: unknown): boolean {
  return typeof value === 'string' && ISO_Z.test(value) && !Number.isNaN(Date.parse(value));
}

export function orderApi(stack: Stack) {
  const url = stack.api.url;
  return {
    /** POST /v1/orders; an object body is sent as JSON, a string byte for byte. */
    create(apiKey: string, body: unknown, headers: Record<string, string> = {}): Promise<TestResponse> {
      return call(url, { method: 'POST', path: '/v1/orders', headers: { 'x-api-key': apiKey, ...headers }, body });
    },
    get(apiKey: string, path: string): Promise<TestResponse> {
      return call(url, { path, headers: { 'x-api-key': apiKey } });
    },
    post(apiKey: string, path: string): Promise<TestResponse> {
      return call(url, { method: 'POST', path, headers: { 'x-api-key': apiKey } });
    },
    /** GET /v1/orders?merchant_order_id=<id> (the reconciliation lookup). */
    byMerchantOrderId(apiKey: string, merchantOrderId: string): Promise<TestResponse> {
      return call(url, { path: `/v1/orders?merchant_order_id=${encodeURIComponent(merchantOrderId)}`, headers: { 'x-api-key': apiKey } });
    },
  };
}

/** Every attempt row for a merchant_order_id, whatever its status (FAILED and CREATING included). */
export function attemptsOf(stack: Stack, merchantId: string, merchantOrderId: string) {
  return stack.api.ctx.pool.any(sql.type(z.object({ id: z.string(), ref_code: z.string(), status: z.string() }))`
    select id, ref_code, status from orders
    where merchant_id = ${merchantId} and merchant_order_id = ${merchantOrderId}
    order by created_at, id`);
}

/** How many order rows (any status) and idempotency keys a merchant has: for "no partial writes". */
export async function rowCounts(stack: Stack, merchantId: string): Promise<{ orders: number; keys: number }> {
  const pool = stack.api.ctx.pool;
  const count = z.object({ n: z.number() });
  const [orders, keys] = await Promise.all([
    pool.oneFirst(sql.type(count)`select count(*)::int as n from orders where merchant_id = ${merchantId}`),
    pool.oneFirst(sql.type(count)`select count(*)::int as n from idempotency_keys where merchant_id = ${merchantId}`),
  ]);
  return { orders, keys };
}

const COUNTER = 1_000_000;

/**
 * Runs `fn` and counts the createQris requests the simulator received meanwhile: a zero-latency
 * fault rule with a large `count` is consumed once per request, and GET /admin/faults shows
 * what remains. Tests in one file run one at a time, so nothing else shares the window.
 */
export async function countCreateQris<T>(simUrl: string, fn: () => Promise<T>): Promise<{ result: T; calls: number }> {
  await clearFaults(simUrl);
  await setFaults(simUrl, { op: 'createQris', mode: 'latency', latency_ms: 0, count: COUNTER });
  try {
    const result = await fn();
    const listed = (await (await fetch(`${simUrl}/admin/faults`)).json()) as { rules: Array<{ op: string; mode: string; count?: number }> };
    const rule = listed.rules.find((r) => r.op === 'createQris' && r.mode === 'latency');
    return { result, calls: COUNTER - (rule?.count ?? 0) };
  } finally {
    await clearFaults(simUrl);
  }
}
