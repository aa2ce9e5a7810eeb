// Reconciliation of a day with a SNAP BI provider: the Transaction History List (service 12),
// signed and paged like every SNAP service, against the simulator's SNAP dialect as a process, with
// the API, vendor and disbursement workers and `ops recon:run`. A clean day is matched (payment,
// refund, transfer) with the provider's fees; a payment whose notify never reached Kasir is
// repaired after the provider's QR MPM query, over more than one page. The ledger audit is clean
// after each.
import t from 'tap';
import { sql } from '../../db/pool.ts';
import { wibDay } from '../../db/recon.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { bankPayout, merchantApi } from '../helpers/merchant-api.ts';
import { ledgerAudit } from '../helpers/money.ts';
import { ops } from '../helpers/processes.ts';
import { clearFaults, simulatePay } from '../helpers/simulator.ts';
import { snapAdmin, startSnapStack } from '../helpers/snap.ts';

const stack = await startSnapStack(t, { groups: ['vendor', 'disbursement'] });
const pool = stack.api.ctx.pool;
const admin = snapAdmin(stack.sim.url);
const m = merchantApi(stack, 'SRC');
const day = wibDay(new Date());
const merchant = await makeMerchant(stack.api.ctx);
await m.fund(merchant, 5_000_000);
t.beforeEach(() => clearFaults(stack.sim.url));

async function reconRun(): Promise<{ run: any; open: any[] }> {
  const res = await ops(stack.env, 'recon:run', '--vendor', 'snap', '--date', day, '--json');
  if (res.code !== 0) throw new Error(`recon:run: ${res.code} ${res.stdout} ${res.stderr}`);
  return JSON.parse(res.stdout);
}
const differencesOf = (reference: string) => pool.any(sql.unsafe`select * from recon_differences where vendor_code = 'snap' and day = ${day}::date and reference = ${reference}`);

t.test('a clean day through the transaction history list: matched, summed, fees reported', async (t) => {
  const paid = await m.paidByQuery(merchant, 210_000);
  const refund = (await m.refund(merchant, paid, { amount: 10_000 })).json.data;
  await m.refundReaches(refund.id, 'SUCCEEDED');
  const payout = (await m.disburse(merchant, bankPayout(100_000, '1234591111'))).json.data;
  await m.disbursementReaches(merchant, payout.id, 'SUCCESS', 20_000);
  const { run, open } = await reconRun();
  t.match(run, { status: 'COMPLETED', source: 'list' });
  t.same(open, []);
  t.match(run.matched, { PAYMENT: { count: 1, amount: 210_000 }, REFUND: { count: 1, amount: 10_000 }, PAYOUT: { count: 1, amount: 100_000 } });
  t.match(run.fees, { PAYMENT: { lines: 1, vendor_fee: 1470 }, PAYOUT: { lines: 1, vendor_fee: 2500 } });
  t.ok((await admin.stats()).calls['/v1.0/transaction-history-list'] >= 1, 'read through service 12');
  await ledgerAudit(t, stack.env);
});

t.test("a payment whose notify never reached Kasir: repaired after the provider's query", async (t) => {
  const ref = (await m.createOrder(merchant, 95_000)).json.data.ref_code;
  t.equal((await simulatePay(stack.sim.url, { reference: ref }, { 'x-sim-fault': 'drop_callback' })).status, 200);
  const { run } = await reconRun();
  t.match(await differencesOf(ref), [{ kind: 'PAID_AT_VENDOR_ONLY', subject: 'PAYMENT', status: 'REPAIRED', repaired_run_id: run.id }]);
  t.equal((await m.getOrder(merchant, ref)).json.data.status, 'PAID');
  await ledgerAudit(t, stack.env);
});

t.test('more lines than a page of 50: every lost payment found and repaired', async (t) => {
  const refs: string[] = [];
  for (let i = 0; i < 52; i++) refs.push((await m.createOrder(merchant, 20_000 + i)).json.data.ref_code);
  await Promise.all(refs.map((reference) => simulatePay(stack.sim.url, { reference }, { 'x-sim-fault': 'drop_callback' })));
  const before = (await admin.stats()).calls['/v1.0/transaction-history-list'] ?? 0;
  const { run, open } = await reconRun();
  t.ok((await admin.stats()).calls['/v1.0/transaction-history-list'] - before >= 2, 'more than one page read');
  t.equal(run.repaired, 52, 'every lost payment repaired');
  t.same(open, []);
  await ledgerAudit(t, stack.env);
});
