// Two of every Procfile line on one database (issue 19): two API processes, two of each worker
// group, the simulator behind a recording proxy. A short mixed load goes through both APIs in
// turn (orders with Idempotency-Key created on one and retried on the other, payments at the
// simulator, refunds, disbursements, a CSV import, a settlement day built by a job and by the
// ops command at once, a report export, expiries), then the run is judged from what it left:
// the vendor's calls, pg-boss's job rows, the webhook receiver against webhook_attempts, the
// scheduler and csv processes' sweep passes (workers/periodic.ts logs one line per pass), and
// the ledger audit.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { adjustWallet } from '../../db/ledger.ts';
import { setSettlementAccount } from '../../db/merchants.ts';
import { findBankByShortCode } from '../../db/master-data.ts';
import { sql } from '../../db/pool.ts';
import { sendJob } from '../../db/queue.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call, eventually } from '../helpers/http.ts';
import { bankPayout } from '../helpers/merchant-api.ts';
import { ledgerAudit } from '../helpers/money.ts';
import { ops } from '../helpers/processes.ts';
import { metricsOf, metricSum, startReplicas, sweepPasses, type Replicas } from '../helpers/replicas.ts';
import { simulatePay, startCallbackReceiver } from '../helpers/simulator.ts';

type M = Awaited<ReturnType<typeof makeMerchant>>;

const EXPIRY_INTERVAL_MS = 300;
/** The minute and 10-minute sweeps (restarts, idempotency keys, exports): a test this short sees one pass of each. */
const LONG_SWEEPS = ['idempotency-keys', 'exports', 'restarts'];

const wibDate = (at: Date) => new Date(at.getTime() + 7 * 3600_000).toISOString().slice(0, 10);
const yesterdayWib = () => wibDate(new Date(Date.now() - 86_400_000));
const wibNoon = (date: string) => new Date(`${date}T12:00:00+07:00`);

function countBy<T>(items: readonly T[], key: (item: T) => string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1);
  return counts;
}

/** The API processes in turn: request n goes to A when n is even, to B when odd. */
const apiFor = (r: Replicas, n: number) => r.apis[n % 2];
const otherApi = (r: Replicas, n: number) => r.apis[(n + 1) % 2];

t.test('two of every line: each order, refund, payout and settlement is executed once, each webhook attempt delivered once, no sweep runs twice in an interval', async (t) => {
  const started = Date.now();
  const r = await startReplicas(t, { env: { EXPIRY_SWEEP_INTERVAL_MS: String(EXPIRY_INTERVAL_MS) } });
  t.comment(`topology up in ${Date.now() - started} ms`);
  const pool = r.ctx.pool;
  const receiver = await startCallbackReceiver();
  t.teardown(() => receiver.close());
  const wallet = await makeMerchant(r.ctx, { notifyUrl: receiver.url });
  const manual = await makeMerchant(r.ctx, { settlement: 'MANUAL', notifyUrl: receiver.url });
  const bca = (await findBankByShortCode(pool, 'BCA'))!;
  await setSettlementAccount(pool, manual.merchant_id, { bankId: bca.id, accountNumber: '1234567890', accountName: 'PT Toko Maju' });
  await pool.transaction((tx) => adjustWallet(tx, { merchantId: wallet.merchant_id, adjustmentId: randomUUID(), amount: 2_000_000, reason: 'test float' }));

  const key = (m: M) => ({ 'x-api-key': m.api_key });
  const get = (n: number, m: M, path: string) => call(apiFor(r, n).url, { path, headers: key(m) });
  const statusOf = (n: number, m: M, path: string, status: string, what: string) =>
    eventually(async () => ((await get(n, m, path)).json?.data?.status === status ? true : undefined), what, 20_000);

  // Orders: created on one API with an Idempotency-Key and retried on the other, all at once.
  // The first answer is 201 only once a vendor worker's confirmation reached the creating API
  // (LISTEN/NOTIFY): neither API process runs a handler.
  const createOn = async (n: number, m: M, amount: number) => {
    const raw = JSON.stringify({ merchant_order_id: `REP-${n}-${randomUUID().slice(0, 8)}`, amount, payment_method: 'QRIS' });
    const headers = { ...key(m), 'idempotency-key': `rep-${randomUUID()}` };
    const first = await call(apiFor(r, n).url, { path: '/v1/orders', headers, body: raw });
    const retry = await call(otherApi(r, n).url, { path: '/v1/orders', headers, body: raw });
    const read = await call(otherApi(r, n).url, { path: `/v1/orders/${first.json?.data?.ref_code}`, headers: key(m) });
    return { n, first, retry, read };
  };
  const ORDERS = 12;
  const creates = await Promise.all([
    ...Array.from({ length: ORDERS }, (_, n) => createOn(n, wallet, 50_000 + n * 1_000)),
    ...Array.from({ length: 3 }, (_, n) => createOn(n, manual, 30_000 + n * 1_000)),
  ]);
  for (const { n, first, retry, read } of creates) {
    const [on, other] = [apiFor(r, n).name, otherApi(r, n).name];
    t.equal(first.status, 201, `order ${n} answers 201 on ${on}: ${first.text}`);
    t.equal(first.json?.data?.status, 'PENDING', `order ${n} is confirmed by the vendor when ${on} answers`);
    t.equal(retry.status, 201, `order ${n} retried on ${other} is 201 too`);
    t.equal(retry.headers['idempotent-replayed'], 'true', `order ${n}: ${other} replays ${on}'s answer`);
    t.ok(retry.raw.equals(first.raw), `order ${n}: byte for byte`);
    t.equal(read.status, 200, `order ${n} is served by ${other}`);
    t.equal(read.json?.data?.id, first.json?.data?.id, `order ${n}: the same order on ${other}`);
  }
  const refOf = (i: number) => creates[i].first.json.data.ref_code as string;
  const walletRefs = Array.from({ length: ORDERS }, (_, i) => refOf(i));
  const manualRefs = [ORDERS, ORDERS + 1, ORDERS + 2].map(refOf);

  // Payments at the simulator for all but two wallet orders (their callbacks reach API B); the
  // other two become overdue and are left to the expiry sweep.
  const paidRefs = [...walletRefs.slice(0, ORDERS - 2), ...manualRefs];
  const overdueRefs = walletRefs.slice(ORDERS - 2);
  await Promise.all(paidRefs.map(async (ref) => {
    const paid = await simulatePay(r.sim.url, { reference: ref });
    if (paid.status !== 200) throw new Error(`pay ${ref}: ${paid.status} ${JSON.stringify(paid.body)}`);
  }));
  await pool.query(sql.unsafe`update orders set expires_at = now() - interval '1 second' where ref_code = any(${sql.array(overdueRefs, 'text')})`);
  await Promise.all([
    ...paidRefs.map((ref, n) => statusOf(n, manualRefs.includes(ref) ? manual : wallet, `/v1/orders/${ref}`, 'PAID', `order ${ref} PAID`)),
    ...overdueRefs.map((ref, n) => statusOf(n, wallet, `/v1/orders/${ref}`, 'EXPIRED', `order ${ref} EXPIRED`)),
  ]);

  // Refunds of four paid orders, each asked on one API and retried on the other with its key.
  const refunds = await Promise.all(walletRefs.slice(0, 4).map(async (ref, n) => {
    const headers = { ...key(wallet), 'idempotency-key': `rfd-${randomUUID()}` };
    const body = { amount: 10_000, reason: 'one item out of stock' };
    const first = await call(apiFor(r, n).url, { path: `/v1/orders/${ref}/refund`, headers, body });
    const retry = await call(otherApi(r, n).url, { path: `/v1/orders/${ref}/refund`, headers, body });
    t.equal(first.status, 201, `refund of ${ref}: ${first.text}`);
    t.equal(retry.json?.data?.id, first.json?.data?.id, `refund of ${ref} retried on the other API is the same refund`);
    return first.json.data.id as string;
  }));

  // Disbursements, each asked on one API and repeated on the other (409, nothing twice).
  const disbursements = await Promise.all(Array.from({ length: 4 }, async (_, n) => {
    const body = { idempotency_key: `dsb-${randomUUID()}`, ...bankPayout(40_000 + n, '1234567890') };
    const first = await call(apiFor(r, n).url, { path: '/v1/disbursements', headers: key(wallet), body });
    const again = await call(otherApi(r, n).url, { path: '/v1/disbursements', headers: key(wallet), body });
    t.equal(first.status, 201, `disbursement ${n}: ${first.text}`);
    t.equal(again.status, 409, `disbursement ${n} repeated on the other API is refused`);
    t.equal(again.json?.error?.code, 'DUPLICATE_IDEMPOTENCY_KEY');
    return first.json.data.id as string;
  }));

  // A CSV import on B, retried on A: the retry imports nothing again.
  const file = ['channel,bank_short_code,account_number,account_name,ewallet_provider,ewallet_phone,amount,notify_url',
    ...[31_000, 32_000, 33_000].map((a) => `BANK,BCA,1234567890,Budi Santoso,,,${a},`)].join('\n') + '\n';
  const upload = async (n: number) => {
    const form = new FormData();
    form.set('file', new Blob([file], { type: 'text/csv' }), 'payouts.csv');
    form.set('idempotency_prefix', 'replicas-payroll');
    const res = await fetch(`${apiFor(r, n).url}/v1/disbursements/import`, { method: 'POST', headers: key(wallet), body: form });
    return { status: res.status, json: (await res.json()) as any };
  };
  const imported = await upload(1);
  t.equal(imported.status, 200, JSON.stringify(imported.json));
  t.match(imported.json.data, { rows: 3, accepted: 3, queued: 3 });
  const importRetry = await upload(0);
  t.match(importRetry.json.data, { rows: 3, accepted: 0, already_imported: 3, queued: 0 }, 'the import retried on A creates nothing');
  const importedIds: string[] = imported.json.data.results.map((row: { disbursement_id: string }) => row.disbursement_id);

  // A settlement day that has ended, for the MANUAL merchant: a settlement-run job (one of the
  // two schedulers takes it) and the ops command, at the same moment.
  const day = yesterdayWib();
  await pool.query(sql.unsafe`update orders set paid_at = ${wibNoon(day).toISOString()} where ref_code = any(${sql.array(manualRefs, 'text')})`);
  const [runJob, opsRun] = await Promise.all([
    sendJob(r.ctx.boss, 'settlement-run', { settlement_date: day, merchant_id: manual.merchant_id }),
    ops(r.env, 'settlements:run', '--date', day, '--merchant', manual.merchant_id, '--json'),
  ]);
  t.equal(opsRun.code, 0, `settlements:run: ${opsRun.stdout} ${opsRun.stderr}`);

  // A report export on A, built by one of the two csv workers.
  const exportAsked = await call(r.apis[0].url, { path: '/v1/reports/export', headers: key(wallet), body: { type: 'orders' } });
  t.equal(exportAsked.status, 201, exportAsked.text);
  const exportId: string = exportAsked.json.data.id;

  // Everything reaches its end, read through both APIs in turn.
  await Promise.all([
    ...refunds.map((id, n) => statusOf(n, wallet, `/v1/refunds/${id}`, 'SUCCEEDED', `refund ${id} SUCCEEDED`)),
    ...[...disbursements, ...importedIds].map((id, n) => statusOf(n, wallet, `/v1/disbursements/${id}`, 'SUCCESS', `disbursement ${id} SUCCESS`)),
  ]);
  let lastSeen = '';
  const settlement = await eventually(async () => {
    // The list takes page and limit only (spec 4.6): the day's settlement is picked from it.
    const res = await get(0, manual, '/v1/settlements');
    const found = res.json?.data?.find((s: { settlement_date: string }) => s.settlement_date === day);
    lastSeen = JSON.stringify(res.json).slice(0, 600);
    return found?.status === 'PAID' ? [found] : undefined;
  }, 'the settlement to be PAID', 30_000).catch((err: Error) => {
    throw new Error(`${err.message}; last seen: ${lastSeen}`);
  });
  t.equal(settlement.length, 1, 'one settlement for the day');
  t.equal(settlement[0].order_count, manualRefs.length, 'with every order of the day');
  t.equal((await get(1, manual, `/v1/settlements/${settlement[0].id}`)).json?.data?.status, 'PAID', 'B serves it too');
  await eventually(async () => {
    const list = await get(1, wallet, '/v1/reports/exports');
    return list.json?.data?.find((e: { id: string; status: string }) => e.id === exportId && e.status === 'COMPLETED');
  }, 'the export to be COMPLETED', 30_000);

  // Quiet: no job left to run (reconciles come due after a second) and no webhook pending.
  const jobRow = z.object({ name: z.string(), resource: z.string().nullable(), state: z.string(), retry_count: z.number() });
  const jobs = () => pool.any(sql.type(jobRow)`
    select name, coalesce(data->>'order_id', data->>'refund_id', data->>'disbursement_id', data->>'settlement_id',
                          data->>'delivery_id', data->>'export_id', data->>'beneficiary_id') as resource, state::text as state, retry_count
    from pgboss.job where name <> 'ping'`);
  await eventually(async () => {
    const [pendingJobs, pendingWebhooks] = await Promise.all([
      jobs().then((rows) => rows.filter((j) => j.state !== 'completed')),
      pool.oneFirst(sql.unsafe`select count(*)::int from webhook_deliveries where status = 'PENDING'`),
    ]);
    return pendingJobs.length === 0 && pendingWebhooks === 0 ? true : undefined;
  }, 'every job to complete and every webhook to be delivered', 30_000);

  t.test('each order, refund, disbursement and settlement reached the vendor once', async (t) => {
    const posts = (path: RegExp) => r.tap.calls.filter((c) => c.method === 'POST' && path.test(c.path));
    const qrisCreates = countBy(posts(/^\/v1\/qris$/), (c) => c.body?.reference);
    t.same([...qrisCreates.keys()].sort(), [...walletRefs, ...manualRefs].sort(), 'a QR was asked for every order, and for nothing else');
    t.same([...qrisCreates.entries()].filter(([, n]) => n !== 1), [], 'each exactly once');

    const refundCodes = await pool.anyFirst(sql.unsafe`select ref_code from refunds where id = any(${sql.array(refunds, 'uuid')})`);
    const refundCalls = countBy(posts(/^\/v1\/qris\/[^/]+\/refunds$/), (c) => c.body?.refund_reference);
    t.same([...refundCalls.keys()].sort(), [...refundCodes].sort(), 'every refund was sent');
    t.same([...refundCalls.entries()].filter(([, n]) => n !== 1), [], 'each exactly once');

    // Each payout goes out under references recorded when a worker claims it (db/payouts.ts).
    const references = await pool.any(sql.type(z.object({ reference: z.string(), kind: z.string(), id: z.string() }))`
      select reference, kind, payout_id::text as id from payout_references`);
    const payoutIds = [...disbursements, ...importedIds, settlement[0].id];
    t.same([...new Set(references.map((x) => x.id))].sort(), [...payoutIds].sort(), 'every disbursement and the settlement were claimed');
    t.same([...countBy(references, (x) => x.id).entries()].filter(([, n]) => n !== 1), [], 'each under one reference: claimed once');
    const payoutCalls = countBy(posts(/^\/v1\/disbursements$/), (c) => c.body?.reference);
    t.same([...payoutCalls.keys()].sort(), references.map((x) => x.reference).sort(), 'every payout was sent');
    t.same([...payoutCalls.entries()].filter(([, n]) => n !== 1), [], 'each exactly once');

    const built = await pool.any(sql.type(z.object({ status: z.string(), order_count: z.number() }))`
      select status, order_count from settlements where merchant_id = ${manual.merchant_id} and settlement_date = ${day}`);
    t.same(built, [{ status: 'PAID', order_count: manualRefs.length }], 'the settlement day was built once, by the job and the command together');
    const expired = await pool.oneFirst(sql.unsafe`
      select count(*)::int from order_events e join orders o on o.id = e.order_id
      where o.ref_code = any(${sql.array(overdueRefs, 'text')}) and e.status = 'EXPIRED'`);
    t.equal(expired, overdueRefs.length, 'each overdue order expired once');

    // Both copies of the vendor line did work, not one copy standing by (a figure, not a rule:
    // pg-boss hands batches to whichever process fetches first).
    const creates = await Promise.all(r.workers.vendor.map(async (p) => metricSum(await metricsOf(p), 'kasir_vendor_call_duration_seconds_count', 'operation="create_qris"')));
    t.equal(creates.reduce((a, b) => a + b, 0), walletRefs.length + manualRefs.length, `vendor workers' create calls add up (${creates.join(' + ')})`);
  });

  t.test('each job ran once: one completed job per resource and queue', async (t) => {
    const rows = await jobs();
    t.same(rows.filter((j) => j.state !== 'completed'), [], 'every job completed');
    const perResource = rows.filter((j) => j.name !== 'settlement-run');
    t.same(perResource.filter((j) => j.resource === null), [], 'every job names its resource');
    t.same([...countBy(perResource, (j) => `${j.name} ${j.resource}`).entries()].filter(([, n]) => n !== 1), [], 'no queue holds two jobs for one resource');
    const byQueue = countBy(perResource, (j) => j.name);
    t.equal(byQueue.get('order-create'), walletRefs.length + manualRefs.length, 'one order-create per order');
    t.equal(byQueue.get('refund-execute'), refunds.length, 'one refund-execute per refund');
    t.equal(byQueue.get('disbursement-execute'), disbursements.length + importedIds.length, 'one disbursement-execute per disbursement');
    t.equal(byQueue.get('settlement-payout'), 1, 'one settlement-payout');
    t.equal(byQueue.get('export-build'), 1, 'one export-build');
    t.equal(byQueue.get('order-reconcile'), undefined, 'no create outcome was unknown');
    t.comment(`jobs: ${JSON.stringify(Object.fromEntries(byQueue))}; retried: ${perResource.filter((j) => j.retry_count > 0).map((j) => j.name).join(', ') || 'none'}`);
    const [run] = await r.ctx.boss.findJobs('settlement-run', { id: runJob! });
    t.equal(run?.state, 'completed', 'the settlement-run job completed');
  });

  t.test('each webhook attempt was delivered once', async (t) => {
    const attempts = await pool.any(sql.type(z.object({ id: z.string(), event: z.string(), status: z.string(), attempts: z.number() }))`
      select d.id, d.event, d.status, (select count(*)::int from webhook_attempts a where a.delivery_id = d.id) as attempts
      from webhook_deliveries d where d.merchant_id = any(${sql.array([wallet.merchant_id, manual.merchant_id], 'uuid')})`);
    t.ok(attempts.length >= paidRefs.length + overdueRefs.length + refunds.length, `${attempts.length} deliveries`);
    t.same(attempts.filter((d) => d.status !== 'DELIVERED' || d.attempts !== 1), [], 'every delivery DELIVERED at its first attempt');
    const received = countBy(receiver.received, (c) => String(c.headers['webhook-id']));
    t.same([...received.keys()].sort(), attempts.map((d) => d.id).sort(), 'the receiver heard every delivery, and nothing else');
    t.same([...received.entries()].filter(([id, n]) => n !== attempts.find((d) => d.id === id)?.attempts), [], 'each as many times as it has attempts: once');
    const events = countBy(attempts, (d) => d.event);
    t.comment(`webhooks: ${JSON.stringify(Object.fromEntries(events))}`);
  });

  t.test('no sweep ran twice in one interval across the scheduler and csv replicas', async (t) => {
    const sweepers = [...r.workers.scheduler, ...r.workers.csv];
    t.ok(sweepers.every((p) => p.alive()), 'both copies of each sweeping line ran throughout');
    const readAt = Date.now();
    const passes = sweepPasses(sweepers);
    const expiry = passes.filter((p) => p.sweep === 'expiry');
    const span = readAt - expiry[0].startedAt;
    t.ok(expiry.length >= 3, `the expiry sweep ran (${expiry.length} passes in ${span} ms)`);
    const close = expiry.slice(1).map((p, i) => ({ gap: p.startedAt - expiry[i].startedAt, what: `${expiry[i].process}→${p.process}` }))
      .filter((pair) => pair.gap < EXPIRY_INTERVAL_MS).map((pair) => `${pair.what} ${pair.gap} ms`);
    t.same(close, [], `consecutive expiry passes start at least ${EXPIRY_INTERVAL_MS} ms apart`);
    t.ok(expiry.length <= Math.floor(span / EXPIRY_INTERVAL_MS) + 1, 'no more passes than intervals begun');
    for (const sweep of LONG_SWEEPS) {
      const these = passes.filter((p) => p.sweep === sweep);
      t.equal(these.length, 1, `${sweep}: one pass in the run (${these.map((p) => p.process).join(', ')})`);
    }
    t.comment(`expiry passes by process: ${JSON.stringify(Object.fromEntries(countBy(expiry, (p) => p.process)))}`);
  });

  t.test('the ledger audit is clean', async (t) => {
    await ledgerAudit(t, r.env);
  });

  t.test('a scheduler killed after claiming expiry passes: the other copy takes the passes over when the next one is due', async (t) => {
    const expiryBy = () => sweepPasses(r.workers.scheduler).filter((p) => p.sweep === 'expiry');
    const holder = r.workers.scheduler.find((p) => p.name === expiryBy().at(-1)!.process)!;
    const other = r.workers.scheduler.find((p) => p !== holder)!;
    const killedAt = Date.now();
    holder.child.kill('SIGKILL');
    const first = await eventually(async () => expiryBy().find((p) => p.process === other.name && p.startedAt >= killedAt), `${other.name} to run an expiry pass`, 10_000);
    t.ok(first, `${other.name} ran the next pass ${first.startedAt - killedAt} ms after ${holder.name} died`);

    // A SIGTERM ends the wait for its next pass and hands the sweep over: it exits cleanly, at once.
    const stopping = Date.now();
    const exited = new Promise<number | null>((resolve) => other.child.once('exit', (code) => resolve(code)));
    other.child.kill('SIGTERM');
    t.equal(await exited, 0, `${other.name} stopped in ${Date.now() - stopping} ms`);
  });
  t.comment(`whole run ${Date.now() - started} ms`);
});
