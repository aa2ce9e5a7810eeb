// The mixed load, over real HTTP, as merchants and payers make it:
//   - V1 orders, each with an Idempotency-Key and its X-Signature; some sent twice on purpose,
//     and every ambiguous answer (no answer, 5xx, 409 ORDER_PENDING_CONFIRMATION, 503
//     VENDOR_ERROR) retried with the same key and the byte-identical body (spec 4.2 rule 8);
//   - payments by the simulated payer (POST /simulate/pay at the simulator);
//   - partial refunds of paid orders, each with an Idempotency-Key;
//   - wallet disbursements (some to accounts the simulator fails, so reversals happen), retried
//     with the same idempotency_key after a lost answer, some re-sent on purpose;
//   - one CSV disbursement import, sent again with the same prefix once it has been answered.
// Webhooks of all of them go to the soak's receiver (the merchant's notify_url).
//
// A request whose outcome stays open is retried by the same client for a while (a merchant's
// retry loop), then left to the drain. Pauses between requests pace the load for a 2-core
// machine shared with seven Kasir processes and Postgres; they are not waits for state.
import { createHmac, randomInt } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { isAmbiguous, type Answer, type Client } from './client.ts';
import { newKeyed, type OrderRecord, type PayoutRecord, type RefundRecord, type Tally } from './tally.ts';

export interface LoadTarget {
  apiUrl: string;
  simulatorUrl: string;
  apiKey: string;
  webhookSecret: string;
  receiverUrl: string;
  runId: string;
}

/** How long one client keeps retrying a request whose outcome is open before leaving it to the drain. */
const RETRY_WINDOW_MS = 20_000;
const ORDER_LOOPS = 3;
const PAY_SHARE = 0.6;
const ORDER_REPLAY_SHARE = 0.3;
const PAYOUT_REPLAY_SHARE = 0.2;
/** Accounts ending 0000 are failed by the simulator (ACCOUNT_CLOSED): each needs a reversal. */
const FAILING_PAYOUT_SHARE = 0.15;
const IMPORT_ROWS = 10;

export interface Load {
  /** Stops starting new work; resolves once every loop has finished its current request. */
  stop(): Promise<void>;
}

export function startLoad(target: LoadTarget, client: Client, tally: Tally, importAfterMs: number): Load {
  let stopped = false;
  // Once stopped, a request left open is not retried here: the drain retries it.
  const ops = operations(target, client, tally, () => stopped);
  const loop = async (op: () => Promise<void>, pauseMs: [number, number]) => {
    while (!stopped) {
      await op();
      await delay(randomInt(pauseMs[0], pauseMs[1]));
    }
  };
  const loops = [
    ...Array.from({ length: ORDER_LOOPS }, () => loop(ops.order, [50, 250])),
    loop(ops.refund, [300, 700]),
    loop(ops.payout, [150, 450]),
    delay(importAfterMs).then(() => (stopped ? undefined : ops.importFile())),
  ];
  return {
    async stop() {
      stopped = true;
      await Promise.all(loops);
    },
  };
}

/** `stopped`: when it says so, retry loops end at their next open answer. */
export function operations(target: LoadTarget, client: Client, tally: Tally, stopped: () => boolean = () => false) {
  let seq = 0;
  const api = (path: string) => `${target.apiUrl}${path}`;
  const authHeaders = { 'x-api-key': target.apiKey, 'content-type': 'application/json' };

  async function sendOrder(rec: OrderRecord, until: number): Promise<void> {
    do {
      rec.sends++;
      const answer = await client.request('POST /v1/orders', api('/v1/orders'), {
        method: 'POST',
        headers: { ...authHeaders, 'idempotency-key': rec.key, 'x-signature': `sha256=${createHmac('sha256', target.webhookSecret).update(rec.raw).digest('hex')}` },
        body: rec.raw,
      });
      if (answer.ok && (answer.status === 200 || answer.status === 201) && answer.json?.data?.id) {
        if (tally.acknowledge(rec, answer.json.data.id)) rec.ackRef ??= answer.json.data.ref_code;
        return;
      }
      if (!isAmbiguous(answer)) return tally.refuse(rec, describe(answer));
      rec.ambiguous++;
      await delay(randomInt(500, 1000));
    } while (Date.now() < until && !stopped());
  }

  async function pay(rec: OrderRecord): Promise<void> {
    const until = Date.now() + RETRY_WINDOW_MS;
    do {
      const answer = await client.request('POST /simulate/pay', `${target.simulatorUrl}/simulate/pay`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ reference: rec.ackRef }),
      });
      // ALREADY_PAID: an earlier attempt whose answer was lost went through.
      if (answer.ok && (answer.status === 200 || answer.json?.error?.code === 'ALREADY_PAID')) {
        rec.payAckAt = Date.now();
        return;
      }
      if (answer.ok && answer.status < 500) {
        rec.payMissed = describe(answer);
        return;
      }
      await delay(randomInt(300, 700));
    } while (Date.now() < until && !stopped());
    rec.payMissed = 'no answer from the simulator';
  }

  async function sendRefund(rec: RefundRecord, until: number): Promise<'done' | 'not-paid-yet'> {
    do {
      rec.sends++;
      const answer = await client.request('POST /v1/orders/:ref/refund', api(`/v1/orders/${rec.orderRef}/refund`), {
        method: 'POST',
        headers: { ...authHeaders, 'idempotency-key': rec.key },
        body: rec.raw,
      });
      if (answer.ok && (answer.status === 200 || answer.status === 201) && answer.json?.data?.id) {
        tally.acknowledge(rec, answer.json.data.id);
        return 'done';
      }
      // The payment's callback has not reached Kasir yet: the order is not PAID there.
      if (answer.ok && answer.json?.error?.code === 'INVALID_STATUS') return 'not-paid-yet';
      if (!isAmbiguous(answer)) {
        tally.refuse(rec, describe(answer));
        return 'done';
      }
      rec.ambiguous++;
      await delay(randomInt(500, 1000));
    } while (Date.now() < until && !stopped());
    return 'done';
  }

  async function sendPayout(rec: PayoutRecord, until: number): Promise<void> {
    do {
      rec.sends++;
      const answer = await client.request('POST /v1/disbursements', api('/v1/disbursements'), { method: 'POST', headers: authHeaders, body: rec.raw });
      if (answer.ok && answer.status === 201 && answer.json?.data?.id) {
        tally.acknowledge(rec, answer.json.data.id);
        return;
      }
      if (answer.ok && answer.json?.error?.code === 'DUPLICATE_IDEMPOTENCY_KEY') {
        // After an acknowledgement or a lost answer: it exists. On a first send: a bug.
        if (rec.sends > 1) rec.existsByKey = true;
        else tally.refuse(rec, describe(answer));
        return;
      }
      if (!isAmbiguous(answer)) return tally.refuse(rec, describe(answer));
      rec.ambiguous++;
      await delay(randomInt(500, 1000));
    } while (Date.now() < until && !stopped());
  }

  const refundCandidates: Array<{ order: OrderRecord; tries: number }> = [];

  return {
    sendOrder,
    sendRefund,
    sendPayout,

    async order() {
      const merchantOrderId = `soak-${target.runId}-${++seq}`;
      const amount = randomInt(10_000, 100_000);
      const raw = JSON.stringify({ merchant_order_id: merchantOrderId, amount, payment_method: 'QRIS', customer_name: 'Soak Payer' });
      const rec: OrderRecord = { ...newKeyed(`order-${merchantOrderId}`, raw), merchantOrderId, amount, ackRef: null, payAckAt: null, payMissed: null, refundKey: null };
      tally.orders.set(rec.key, rec);
      await sendOrder(rec, Date.now() + RETRY_WINDOW_MS);
      if (!rec.ackRef) return;
      // The same key and body again: must name the same order.
      if (Math.random() < ORDER_REPLAY_SHARE) await sendOrder(rec, Date.now() + RETRY_WINDOW_MS);
      if (Math.random() < PAY_SHARE) {
        await pay(rec);
        if (rec.payAckAt && Math.random() < 0.5) refundCandidates.push({ order: rec, tries: 0 });
      }
    },

    async refund() {
      const candidate = refundCandidates.shift();
      if (!candidate) return;
      const order = candidate.order;
      const rec: RefundRecord = {
        ...newKeyed(`refund-${order.ackRef}`, JSON.stringify({ amount: Math.floor(order.amount / 2), reason: 'soak' })),
        orderRef: order.ackRef!,
        orderId: order.ackId!,
      };
      const outcome = await sendRefund(rec, Date.now() + RETRY_WINDOW_MS);
      // Asked before Kasir heard of the payment: ask again later (and never record it as made).
      if (outcome === 'not-paid-yet') {
        if (++candidate.tries < 10) refundCandidates.push(candidate);
        return;
      }
      order.refundKey = rec.key;
      tally.refunds.set(rec.key, rec);
    },

    async payout() {
      const key = `payout-${target.runId}-${++seq}`;
      const expectFailure = Math.random() < FAILING_PAYOUT_SHARE;
      const account = `${randomInt(100_000, 999_999)}${expectFailure ? '0000' : String(randomInt(1_000, 6_999))}`;
      const raw = JSON.stringify({
        idempotency_key: key,
        channel: 'BANK',
        bank_short_code: 'BCA',
        account_number: account,
        account_name: 'Budi Santoso',
        amount: randomInt(10_000, 60_000),
        notify_url: target.receiverUrl,
      });
      const rec: PayoutRecord = { ...newKeyed(key, raw), existsByKey: false, expectFailure };
      tally.payouts.set(key, rec);
      await sendPayout(rec, Date.now() + RETRY_WINDOW_MS);
      if (rec.ackId && Math.random() < PAYOUT_REPLAY_SHARE) await sendPayout(rec, Date.now() + RETRY_WINDOW_MS);
    },

    /** The CSV import: sent until answered, then once more with the same prefix (every row ALREADY_IMPORTED). */
    async importFile() {
      const prefix = `soak-import-${target.runId}`;
      const lines = ['channel,bank_short_code,account_number,account_name,ewallet_provider,ewallet_phone,amount,notify_url'];
      for (let row = 1; row <= IMPORT_ROWS; row++) {
        const account = `${randomInt(100_000, 999_999)}${row % 5 === 0 ? '0000' : String(randomInt(1_000, 6_999))}`;
        lines.push(`BANK,BCA,${account},Siti Rahma,,,${randomInt(10_000, 40_000)},${target.receiverUrl}`);
      }
      const file = `${lines.join('\n')}\n`;
      const record = { prefix, rows: IMPORT_ROWS, ackIds: new Map<string, string>(), sends: 0, replayed: false };
      tally.imports = record;
      const send = async (): Promise<Extract<Answer, { ok: true }> | null> => {
        const until = Date.now() + RETRY_WINDOW_MS * 2;
        do {
          record.sends++;
          const form = new FormData();
          form.set('idempotency_prefix', prefix);
          form.set('file', new Blob([file], { type: 'text/csv' }), 'soak.csv');
          const answer = await client.request('POST /v1/disbursements/import', api('/v1/disbursements/import'), { method: 'POST', headers: { 'x-api-key': target.apiKey }, body: form });
          if (answer.ok && answer.status === 200 && Array.isArray(answer.json?.data?.results)) return answer;
          if (!isAmbiguous(answer)) {
            tally.unexpected.push(`import ${prefix}: ${describe(answer)}`);
            return null;
          }
          await delay(randomInt(500, 1000));
          // Not cut short by the end of the window: the import is sent once per run, and the
          // audit checks its replay.
        } while (Date.now() < until);
        return null;
      };
      const first = await send();
      if (!first) return;
      for (const row of first.json.data.results as Array<{ idempotency_key: string; status: string; disbursement_id?: string }>) {
        if (row.disbursement_id) record.ackIds.set(row.idempotency_key, row.disbursement_id);
        else tally.unexpected.push(`import row ${row.idempotency_key}: ${row.status}`);
      }
      const again = await send();
      if (!again) return;
      record.replayed = true;
      for (const row of again.json.data.results as Array<{ idempotency_key: string; status: string; disbursement_id?: string }>) {
        const first = record.ackIds.get(row.idempotency_key);
        if (row.status !== 'ALREADY_IMPORTED' || row.disbursement_id !== first) {
          tally.mismatches.push({ key: row.idempotency_key, first: first ?? '(none)', then: `${row.status} ${row.disbursement_id ?? ''}`.trim() });
        }
      }
    },
  };
}

export function describe(answer: Answer): string {
  return answer.ok ? `${answer.status} ${answer.json?.error?.code ?? ''} ${answer.json?.error?.message ?? ''}`.trim() : answer.error;
}
