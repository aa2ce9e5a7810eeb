// The history bench's loader (scripts/bench/history-load.ts) at a tiny size: the year it writes
// must pass the real ledger audit (`ops ledger:audit`), hold orders in every listed state with
// their refunds, payouts and webhooks, and spread over the year.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { findBankByShortCode } from '../../db/master-data.ts';
import { createPool } from '../../db/pool.ts';
import { recountProfits, sumProfits } from '../../db/reports.sql.ts';
import { createSealer, newMasterKey } from '../../db/secrets.ts';
import { upsertVendor } from '../../db/vendors.ts';
import { loadYear } from '../../scripts/bench/history-load.ts';
import { testEnv } from '../helpers/config.ts';
import { testDatabase } from '../helpers/db.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { ledgerAudit } from '../helpers/money.ts';

const databaseUrl = await testDatabase(t);
const pool = await createPool(databaseUrl, { size: 2 });
t.teardown(() => pool.end());
const client = new pg.Client({ connectionString: databaseUrl });
await client.connect();
t.teardown(() => client.end());
const sealer = createSealer(newMasterKey());

t.test('a loaded year passes the ledger audit and looks like a year of the API', async (t) => {
  await upsertVendor(pool, sealer, { code: 'hist-sim', kind: 'simulator', baseUrl: 'http://127.0.0.1:9', credentials: { secret: randomBytes(18).toString('base64url') } });
  const bank = await findBankByShortCode(pool, 'BCA');
  const big = await makeMerchant({ pool, sealer });
  const small = await makeMerchant({ pool, sealer });
  const end = new Date();
  await loadYear({ client, vendorCode: 'hist-sim', bank: bank!, end }, [{ id: big.merchant_id, orders: 2000 }, { id: small.merchant_id, orders: 300 }]);

  await ledgerAudit(t, testEnv(databaseUrl));

  const { rows: statuses } = await client.query<{ merchant_id: string; status: string; n: string; first: Date; last: Date }>(
    `select merchant_id, status, count(*) as n, min(created_at) as first, max(created_at) as last from orders group by 1, 2`,
  );
  const of = (merchantId: string) => statuses.filter((r) => r.merchant_id === merchantId);
  t.same(of(big.merchant_id).map((r) => r.status).sort(), ['EXPIRED', 'FAILED', 'PAID', 'PENDING', 'REFUNDED'], 'every state');
  t.equal(of(big.merchant_id).reduce((sum, r) => sum + Number(r.n), 0), 2000);
  t.equal(of(small.merchant_id).reduce((sum, r) => sum + Number(r.n), 0), 300);
  const first = Math.min(...statuses.map((r) => r.first.getTime()));
  t.ok(end.getTime() - first > 364 * 86_400_000, 'spread over the year');

  const { rows: [c] } = await client.query<Record<string, string>>(
    `select (select count(*) from orders where status in ('PAID', 'REFUNDED')) as paid,
            (select count(*) from orders where status = 'EXPIRED') as expired,
            (select count(*) from orders where status = 'REFUNDED') as refunded,
            (select count(*) from refunds where status = 'SUCCEEDED') as refunds,
            (select count(*) from disbursements) as payouts,
            (select count(distinct status) from disbursements) as payout_states,
            (select count(*) from webhook_deliveries) as deliveries,
            (select count(*) from webhook_attempts) as attempts,
            (select count(*) from vendor_callbacks where type = 'payment') as payment_callbacks,
            (select count(*) from ledger_transfers where kind = 'ORDER_PAYMENT') as payments,
            (select count(*) from disbursement_daily_totals) as daily_totals,
            (select count(*) from orders o where not exists (select 1 from order_events e where e.order_id = o.id)) as without_events`,
  );
  const n = (k: string) => Number(c[k]);
  t.ok(n('refunded') > 0 && n('refunds') > n('refunded'), 'full and partial refunds');
  t.ok(n('payouts') > 0, 'payouts');
  t.equal(n('payout_states'), 2, 'payouts SUCCESS and FAILED');
  t.equal(n('payments'), n('paid'), 'every paid order posted once');
  t.equal(n('payment_callbacks'), n('paid'), 'a vendor callback per paid order');
  t.equal(n('deliveries'), n('paid') + n('expired') + n('refunds') + n('payouts'), 'a webhook per reported change');
  t.ok(n('attempts') > n('deliveries'), 'some deliveries retried');
  t.ok(n('daily_totals') > 0, 'daily payout totals');
  t.equal(n('without_events'), 0, 'every order has its timeline');

  // The profits report reads the kept day totals: for the whole year, a month and one day of
  // each merchant they equal the totals counted from the records.
  const wib = (ms: number) => new Date(ms + 7 * 3_600_000).toISOString().slice(0, 10);
  const periods = [
    [wib(end.getTime() - 366 * 86_400_000), wib(end.getTime())],
    [wib(end.getTime() - 200 * 86_400_000), wib(end.getTime() - 170 * 86_400_000)],
    [wib(end.getTime() - 3 * 86_400_000), wib(end.getTime() - 3 * 86_400_000)],
  ];
  for (const m of [big, small]) {
    for (const [from, to] of periods) {
      const kept = await sumProfits(pool, m.merchant_id, from, to);
      t.strictSame(kept, await recountProfits(pool, m.merchant_id, from, to), `profits ${from}..${to}: the kept totals are the records' own`);
      if (m === big && from !== to) t.ok(kept.order_count > 0 && kept.refund_total > 0 && kept.disbursement_count > 0, `${from}..${to} holds payments, refunds and payouts`);
    }
  }
});
