// Failover between the two real gateways, through the real processes: Xendit first and
// Midtrans behind it, both played by simulator processes speaking their own APIs. An outage
// Xendit surely did nothing in (rate-limited, or not reachable at all) sends orders and
// payouts to Midtrans; once Xendit is back, they return to it. Every test ends with the audit.
import t from 'tap';
import { sql } from '../../db/pool.ts';
import { accountHolder } from '../../gateways/simulator/magic.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { bankPayout, merchantApi } from '../helpers/merchant-api.ts';
import { midtransDialectVendor } from '../helpers/midtrans.ts';
import { balanceOf, ledgerAudit } from '../helpers/money.ts';
import { clearFaults, setFaults, simulatePay, startSimulatorProcess } from '../helpers/simulator.ts';
import { startVendorStack } from '../helpers/vendor-stack.ts';
import { xenditDialectVendor, xenditSimulatorEnv } from '../helpers/xendit.ts';

const stack = await startVendorStack(t, [xenditDialectVendor('xendit'), midtransDialectVendor('midtrans')]);
const pool = stack.api.ctx.pool;
const m = merchantApi(stack, 'FO');
const midtrans = stack.sims[1].url;

const vendorOf = (ref: string) => pool.oneFirst(sql.unsafe`select vendor_code from orders where ref_code = ${ref}`);

/** Creates an order, pays it at whichever simulator took it, and waits for PAID. */
async function paidAt(merchant: Awaited<ReturnType<typeof makeMerchant>>, simulatorUrl: string) {
  const created = await m.createOrder(merchant, 60_000);
  if (created.status !== 201) throw new Error(`create: ${created.status} ${created.text}`);
  const ref: string = created.json.data.ref_code;
  const vendor = await vendorOf(ref);
  if ((await simulatePay(simulatorUrl, { reference: ref })).status !== 200) throw new Error(`pay ${ref} at ${simulatorUrl}`);
  await m.orderReaches(merchant, ref, 'PAID');
  return vendor;
}

t.test('Xendit rate-limits every call: orders go to Midtrans and are paid there; then back to Xendit', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  await setFaults(stack.sims[0].url, { op: 'createQris', mode: 'reject', status: 429 });
  t.equal(await paidAt(merchant, midtrans), 'midtrans', 'taken and paid (notification) at Midtrans');
  await clearFaults(stack.sims[0].url);
  t.equal(await paidAt(merchant, stack.sims[0].url), 'xendit', 'back at Xendit once it answers');
  t.equal(await balanceOf(stack, merchant), 2 * (60_000 - 420), 'both credited, amount − MDR');
  await ledgerAudit(t, stack.env);
});

t.test('Xendit unreachable: an order and a payout go to Midtrans; a Xendit back on its address takes the next ones', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  await m.fund(merchant, 500_000);
  const xenditUrl = new URL(stack.sims[0].url);
  await stack.sims[0].stop();

  t.equal(await paidAt(merchant, midtrans), 'midtrans', 'refused connection: failed, the next vendor took it');
  // To the holder the bank names: Iris checks the name before paying.
  const payout = await m.disburse(merchant, { ...bankPayout(100_000, '1234567890', 'MANDIRI'), account_name: accountHolder('1234567890') });
  t.equal(payout.status, 201, payout.text);
  await m.disbursementReaches(merchant, payout.json.data.id, 'SUCCESS', 30_000);
  t.equal(await pool.oneFirst(sql.unsafe`select vendor_code from disbursements where id = ${payout.json.data.id}`), 'midtrans', 'paid out through Iris');

  const back = await startSimulatorProcess({
    SIMULATOR_CODE: 'xendit',
    SIMULATOR_PORT: xenditUrl.port,
    SIMULATOR_DISBURSE_DELAY_MS: '100',
    ...xenditSimulatorEnv(`${stack.api.url}/callbacks/xendit`),
  });
  t.teardown(() => back.stop());
  t.equal(await paidAt(merchant, back.url), 'xendit', 'Xendit takes orders again');
  const next = await m.disburse(merchant, { ...bankPayout(50_000, '1234567890', 'MANDIRI'), account_name: accountHolder('1234567890') });
  await m.disbursementReaches(merchant, next.json.data.id, 'SUCCESS', 30_000);
  t.equal(await pool.oneFirst(sql.unsafe`select vendor_code from disbursements where id = ${next.json.data.id}`), 'xendit', 'and payouts');
  await ledgerAudit(t, stack.env);
});
