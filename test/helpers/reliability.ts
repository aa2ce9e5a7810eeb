// Helpers for the order reliability tests (failover, unknown outcomes, crashes): create orders
// the way a merchant does, ask a simulator whether it holds a QR, and read the create attempts
// and their order-create jobs, which the API never lists (CREATING and FAILED are internal).
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { sql, type Pool } from '../../db/pool.ts';
import { call, type TestResponse } from './http.ts';
import { simulatorRequest, type SimulatorProcess } from './simulator.ts';

export interface OrderBody {
  merchant_order_id: string;
  amount: number;
  payment_method: 'QRIS';
  customer_phone: string;
}

/** A fresh body; sent twice it is byte-identical (same object, same JSON.stringify). */
export function orderBody(prefix: string, amount = 150_000): OrderBody {
  return { merchant_order_id: `${prefix}-${randomBytes(4).toString('hex')}`, amount, payment_method: 'QRIS', customer_phone: '0812-3456-7890' };
}

export function newKey(): string {
  return `key-${randomBytes(8).toString('hex')}`;
}

export function postOrder(baseUrl: string, apiKey: string, body: OrderBody, idempotencyKey?: string): Promise<TestResponse> {
  const headers: Record<string, string> = { 'x-api-key': apiKey };
  if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
  return call(baseUrl, { path: '/v1/orders', headers, body });
}

/** GET /v1/orders?merchant_order_id=…: the merchant's reconciliation lookup (spec 4.2 rule 8). */
export async function lookupOrders(baseUrl: string, apiKey: string, merchantOrderId: string): Promise<any[]> {
  const res = await call(baseUrl, { path: `/v1/orders?merchant_order_id=${encodeURIComponent(merchantOrderId)}`, headers: { 'x-api-key': apiKey } });
  if (res.status !== 200 || res.json?.success !== true) throw new Error(`order lookup answered ${res.status}: ${res.text}`);
  return res.json.data;
}

/** The QR a simulator holds for a reference: 200 with the QR, or 404 QR_NOT_FOUND. */
export function qrAt(sim: SimulatorProcess, reference: string) {
  return simulatorRequest(sim.url, sim.secret, 'GET', `/v1/qris/${encodeURIComponent(reference)}`);
}

const attemptRow = z.object({
  id: z.string(),
  ref_code: z.string(),
  status: z.string(),
  pending_vendor: z.string().nullable(),
  vendors_tried: z.array(z.string()),
  vendor_code: z.string().nullable(),
  failure_code: z.string().nullable(),
});
export type Attempt = z.infer<typeof attemptRow>;

/** Every create attempt (any status) for a merchant_order_id, oldest first. */
export async function attemptsOf(pool: Pool, merchantId: string, merchantOrderId: string): Promise<Attempt[]> {
  return [
    ...(await pool.any(sql.type(attemptRow)`
      select id, ref_code, status, pending_vendor, vendors_tried, vendor_code, failure_code
      from orders where merchant_id = ${merchantId} and merchant_order_id = ${merchantOrderId}
      order by created_at, id`)),
  ];
}

const jobRow = z.object({ state: z.string(), retry_count: z.number() });

/** The order-create jobs queued for an attempt. */
export async function createJobsOf(pool: Pool, orderId: string) {
  return [
    ...(await pool.any(sql.type(jobRow)`
      select state::text as state, retry_count from pgboss.job
      where name = 'order-create' and data->>'order_id' = ${orderId}
      order by created_on`)),
  ];
}

/**
 * A pg-boss instance that runs supervision (job expiry) on demand. The worker processes run it
 * every 60 s (pg-boss's default monitor interval, not configurable through Kasir's env), which
 * is too slow for a test that waits for a killed worker's job to expire.
 */
/** The simulator's active fault rules; a rule with `count` disappears once it has been applied. */
export async function faultRules(sim: SimulatorProcess): Promise<unknown[]> {
  const response = await fetch(`${sim.url}/admin/faults`);
  return ((await response.json()) as { rules: unknown[] }).rules;
}
