// Money test helpers: paid orders as a payer makes them (through the simulator gateway), wallet
// reads through the API, and the ledger audit run exactly as an operator runs it. Every money
// test ends with ledgerAudit.
import type { Test } from 'tap';
import { randomUUID } from 'node:crypto';
import { adjustWallet } from '../../db/ledger.ts';
import type { Pool } from '../../db/pool.ts';
import { call, eventually } from './http.ts';
import { xSignature } from './order-lifecycle.ts';
import { ops } from './processes.ts';
import { simulatePay } from './simulator.ts';
import type { Stack } from './stack.ts';

export interface MoneyMerchant {
  merchant_id: string;
  api_key: string;
  webhook_secret?: string | null;
}

let orderSeq = 0;

/** Creates a V1 order and pays it at the simulator; resolves once the API shows it PAID. */
export async function paidOrder(stack: Stack, merchant: MoneyMerchant, amount: number): Promise<{ ref_code: string; id: string }> {
  const body = JSON.stringify({ merchant_order_id: `PAY-${process.pid}-${Date.now()}-${++orderSeq}`, amount, payment_method: 'QRIS' });
  const headers: Record<string, string> = { 'x-api-key': merchant.api_key };
  if (merchant.webhook_secret) headers['x-signature'] = xSignature(merchant.webhook_secret, body);
  const created = await call(stack.api.url, { path: '/v1/orders', headers, body });
  if (created.status !== 201) throw new Error(`order create: ${created.status} ${created.text}`);
  const ref: string = created.json.data.ref_code;
  const paid = await simulatePay(stack.sim.url, { reference: ref });
  if (paid.status !== 200) throw new Error(`simulate pay: ${paid.status} ${JSON.stringify(paid.body)}`);
  await eventually(async () => {
    const res = await call(stack.api.url, { path: `/v1/orders/${ref}`, headers: { 'x-api-key': merchant.api_key } });
    return res.json?.data?.status === 'PAID' ? true : undefined;
  }, `order ${ref} to be PAID`);
  return { ref_code: ref, id: created.json.data.id };
}

export async function balanceOf(stack: Stack, merchant: MoneyMerchant): Promise<number> {
  const res = await call(stack.api.url, { path: '/v1/balance', headers: { 'x-api-key': merchant.api_key } });
  if (res.status !== 200) throw new Error(`GET /v1/balance: ${res.status} ${res.text}`);
  return res.json.data.balance;
}

/** `npm run --silent ops -- ledger:audit --json`, asserted clean. */
export async function ledgerAudit(t: Test, env: Record<string, string>): Promise<void> {
  const res = await ops(env, 'ledger:audit', '--json');
  const report = JSON.parse(res.stdout || '{}');
  t.same(report.problems, [], 'ledger audit: no problems');
  t.equal(res.code, 0, 'ledger audit exits 0');
}

/** Puts `amount` in the merchant's wallet as an operator adjustment does (`ops ledger:adjust`). */
export async function fundWallet(pool: Pool, merchant: { merchant_id: string }, amount: number): Promise<void> {
  await pool.transaction((tx) => adjustWallet(tx, { merchantId: merchant.merchant_id, adjustmentId: randomUUID(), amount, reason: 'test float' }));
}
