// What a merchant does over the V1 API in the vendor flow tests (orders, refunds, wallet
// payouts), and the waits on their outcomes, bound to one stack. Each helper is one real HTTP
// call or a poll with a deadline; nothing of Kasir's is called directly except the test float.
import { accountHolder } from '../../gateways/simulator/magic.ts';
import { randomUUID } from 'node:crypto';
import { adjustWallet } from '../../db/ledger.ts';
import { sql } from '../../db/pool.ts';
import type { makeMerchant } from './factories.ts';
import { call, eventually } from './http.ts';
import { simulatePay } from './simulator.ts';
import type { Stack } from './stack.ts';

type Merchant = Awaited<ReturnType<typeof makeMerchant>>;

export function merchantApi(stack: Stack, label: string) {
  const api = stack.api.url;
  const pool = stack.api.ctx.pool;
  let seq = 0;
  const orderBody = (amount: number) => ({ merchant_order_id: `${label}-${process.pid}-${Date.now()}-${++seq}`, amount, payment_method: 'QRIS' });
  const key = (m: Merchant) => ({ 'x-api-key': m.api_key });

  const getOrder = (m: Merchant, ref: string) => call(api, { path: `/v1/orders/${ref}`, headers: key(m) });
  const fetchStatus = (m: Merchant, ref: string) => call(api, { method: 'POST', path: `/v1/orders/${ref}/fetch-status`, headers: key(m) });
  const createOrder = (m: Merchant, amount: number, body: object = orderBody(amount)) => call(api, { path: '/v1/orders', headers: key(m), body });

  const orderReaches = (m: Merchant, ref: string, status: string, deadlineMs = 10_000) =>
    eventually(async () => {
      const res = await getOrder(m, ref);
      return res.json?.data?.status === status ? res.json.data : undefined;
    }, `order ${ref} to become ${status}`, deadlineMs);

  return {
    orderBody,
    createOrder,
    getOrder,
    fetchStatus,
    orderReaches,

    /** An order paid at the vendor and made PAID by its callback (or notification). */
    async paid(m: Merchant, amount: number, simulatorUrl = stack.sim.url): Promise<string> {
      const created = await createOrder(m, amount);
      if (created.status !== 201) throw new Error(`order create: ${created.status} ${created.text}`);
      const ref: string = created.json.data.ref_code;
      const paid = await simulatePay(simulatorUrl, { reference: ref });
      if (paid.status !== 200) throw new Error(`pay: ${paid.status} ${JSON.stringify(paid.body)}`);
      await orderReaches(m, ref, 'PAID');
      return ref;
    },

    /** An order paid at the vendor (its callback dropped) and made PAID by fetch-status. */
    async paidByQuery(m: Merchant, amount: number, simulatorUrl = stack.sim.url): Promise<string> {
      const created = await createOrder(m, amount);
      if (created.status !== 201) throw new Error(`order create: ${created.status} ${created.text}`);
      const ref: string = created.json.data.ref_code;
      const paid = await simulatePay(simulatorUrl, { reference: ref }, { 'x-sim-fault': 'drop_callback' });
      if (paid.status !== 200) throw new Error(`pay: ${paid.status} ${JSON.stringify(paid.body)}`);
      const res = await fetchStatus(m, ref);
      if (res.json?.data?.status !== 'PAID') throw new Error(`fetch-status: ${res.status} ${res.text}`);
      return ref;
    },

    refund(m: Merchant, ref: string, body: Record<string, unknown>) {
      return call(api, { method: 'POST', path: `/v1/orders/${ref}/refund`, headers: key(m), body });
    },

    refundReaches(id: string, status: string, deadlineMs = 20_000) {
      return eventually(async () => ((await pool.maybeOneFirst(sql.unsafe`select status from refunds where id = ${id}`)) === status ? true : undefined), `refund ${id} to become ${status}`, deadlineMs);
    },

    async fund(m: Merchant, amount: number) {
      await pool.transaction((tx) => adjustWallet(tx, { merchantId: m.merchant_id, adjustmentId: randomUUID(), amount, reason: 'test float' }));
    },

    disburse(m: Merchant, body: Record<string, unknown>) {
      return call(api, { path: '/v1/disbursements', headers: key(m), body: { idempotency_key: randomUUID(), ...body } });
    },

    disbursementReaches(m: Merchant, id: string, status: string, deadlineMs = 15_000) {
      return eventually(async () => {
        const res = await call(api, { path: `/v1/disbursements/${id}`, headers: key(m) });
        return res.json?.data?.status === status ? res.json.data : undefined;
      }, `disbursement ${id} to become ${status}`, deadlineMs);
    },
  };
}

/** A bank payout to the holder the simulator's banks name for that account (Iris and SNAP check the name before paying). */
export const bankPayout = (amount: number, account: string, bank = 'BCA') => ({ channel: 'BANK', bank_short_code: bank, account_number: account, account_name: accountHolder(account) ?? 'Budi Santoso', amount });
