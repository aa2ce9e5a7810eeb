// Reports and exports (spec 4.8, DESIGN 6) through the whole stack: the API over HTTP, real
// vendor, disbursement and csv worker processes, the simulator gateway. The profits report is
// checked against the ledger's postings; each export type's CSV against what the API shows and,
// byte for byte, against what csv-stringify made of the same rows (the build before Postgres
// wrote the CSV); the COPY stream's backpressure, abort and timeout. The csv worker's memory
// on a large export is test/reports/export-streaming.test.ts.
import t from 'tap';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { parse } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import { z } from 'zod';
import { copyOut } from '../../db/copy-out.ts';
import { exportColumns, selectExportRows, type ExportType } from '../../db/exports.sql.ts';
import { mdrOf } from '../../db/money-rules.ts';
import { sql } from '../../db/pool.ts';
import { sendJob } from '../../db/queue.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call, eventually } from '../helpers/http.ts';
import { ledgerAudit, paidOrder } from '../helpers/money.ts';
import { startWorkerGroup, type Proc } from '../helpers/processes.ts';
import { simulatePay, startCallbackReceiver } from '../helpers/simulator.ts';
import { xSignature } from '../helpers/order-lifecycle.ts';
import { startStack } from '../helpers/stack.ts';
import { ISO_Z, UUID } from '../helpers/v1-orders.ts';

type M = Awaited<ReturnType<typeof makeMerchant>>;

// The csv worker runs apart from the stack's groups so the test holds its process (its pid for
// memory, and restarts with other settings).
const stack = await startStack(t, { groups: ['vendor', 'disbursement', 'webhook'] });
const pool = stack.api.ctx.pool;
let csv: Proc = await startWorkerGroup(t, 'csv', stack.env);

async function restartCsv(env: Record<string, string> = {}) {
  await csv.stop();
  csv = await startWorkerGroup(t, 'csv', { ...stack.env, ...env });
}

const EXPORT_FIELDS = ['completed_at', 'created_at', 'date_from', 'date_to', 'download_url', 'error', 'id', 'row_count', 'status', 'type'];
const PROFIT_FIELDS = [
  'date_from', 'date_to', 'disbursement_count', 'disbursement_fee_total', 'disbursement_total', 'gross_amount', 'mdr_total',
  'net_amount', 'order_count', 'refund_total',
];
const HEADERS = {
  // The last three came later, appended so that files read by position keep their columns.
  orders: 'id,ref_code,merchant_order_id,api,payment_method,amount,status,customer_name,customer_email,customer_phone,vendor_rrn,is_settled,created_at,paid_at,expires_at,refunded_amount,mdr_amount,net_amount',
  settlements: 'id,ref_code,settlement_date,period_start,period_end,order_count,gross_amount,mdr_total,refund_total,disbursement_fee,platform_fee,aggregator_fee,net_payout,bank_id,bank_short_code,account_number,account_name,status,completed_at,created_at,updated_at',
  disbursements: 'id,ref_code,idempotency_key,source,channel,bank_id,bank_short_code,account_number,account_name,ewallet_provider,ewallet_phone,request_amount,fee,final_amount,total_debit,status,failure_reason,vendor_disbursement_id,requested_at,completed_at,created_at',
  balance_history: 'id,type,amount,balance_before,balance_after,reference_type,reference_id,ref_code,description,created_at',
};

const get = (m: M, path: string) => call(stack.api.url, { path, headers: { 'x-api-key': m.api_key } });
const post = (m: M, path: string, body: unknown) => call(stack.api.url, { path, headers: { 'x-api-key': m.api_key }, body });
const requestExport = (m: M, body: Record<string, unknown>) => post(m, '/v1/reports/export', body);
const download = (m: M, id: string) => get(m, `/v1/reports/exports/${id}/download`);

/** Polls the export list until the export has `status`; returns its record. */
function exportReaches(m: M, id: string, status: string, deadlineMs = 20_000) {
  return eventually(async () => {
    const list = await get(m, '/v1/reports/exports?limit=100');
    const found = list.json.data.find((e: { id: string }) => e.id === id);
    return found?.status === status ? found : undefined;
  }, `export ${id} to become ${status}`, deadlineMs);
}

/** Requests an export, waits for it and returns its record and parsed CSV (header first). */
async function exported(m: M, body: Record<string, unknown>) {
  const res = await requestExport(m, body);
  if (res.status !== 201) throw new Error(`export: ${res.status} ${res.text}`);
  const record = await exportReaches(m, res.json.data.id, 'COMPLETED', 60_000);
  const file = await download(m, record.id);
  if (file.status !== 200) throw new Error(`download: ${file.status} ${file.text}`);
  return { record, file, rows: parse(file.text) as string[][] };
}

/** WIB calendar date of an instant. */
const wibDate = (d: Date) => new Date(d.getTime() + 7 * 3_600_000).toISOString().slice(0, 10);

function legacyCreate(m: M, orderId: string, totalAmount: number) {
  const signature = createHash('sha512').update(`${m.legacy_client_id}|${orderId}|${totalAmount}|${m.legacy_client_secret}`).digest('hex');
  return call(stack.api.url, {
    path: '/api/order/create',
    body: { clientId: m.legacy_client_id, orderId, totalAmount, paymentType: 'QRIS', signature, customerName: '=HYPERLINK("x")' },
  });
}

async function statusOf(table: 'orders' | 'refunds' | 'disbursements', id: string) {
  return pool.oneFirst(sql.type(z.object({ status: z.string() }))`select status from ${sql.identifier([table])} where id = ${id}`);
}

function reaches(table: 'orders' | 'refunds' | 'disbursements', id: string, status: string) {
  return eventually(async () => ((await statusOf(table, id)) === status ? true : undefined), `${table} ${id} to become ${status}`, 15_000);
}

/** What the ledger says about a merchant's period: postings by transfer kind and account. */
async function ledgerTotals(merchantId: string, dateFrom: string, dateTo: string) {
  return pool.one(sql.type(z.object({
    order_count: z.number(), gross_amount: z.number(), mdr_total: z.number(), refund_total: z.number(),
    disbursement_count: z.number(), disbursement_total: z.number(), disbursement_fee_total: z.number(),
  }))`
    select
      count(*) filter (where t.kind = 'ORDER_PAYMENT' and a.kind = 'VENDOR_CLEARING')::int as order_count,
      coalesce(-sum(p.amount) filter (where t.kind = 'ORDER_PAYMENT' and a.kind = 'VENDOR_CLEARING'), 0)::bigint as gross_amount,
      coalesce(sum(p.amount) filter (where t.kind = 'ORDER_PAYMENT' and a.kind = 'FEE_REVENUE'), 0)::bigint as mdr_total,
      coalesce(sum(p.amount) filter (where t.kind = 'REFUND_COMPLETED' and a.kind = 'VENDOR_CLEARING'), 0)::bigint as refund_total,
      count(*) filter (where t.kind = 'DISBURSEMENT_COMPLETED' and a.kind = 'VENDOR_CLEARING')::int as disbursement_count,
      coalesce(sum(p.amount) filter (where t.kind = 'DISBURSEMENT_COMPLETED' and a.kind = 'VENDOR_CLEARING'), 0)::bigint as disbursement_total,
      coalesce(sum(p.amount) filter (where t.kind = 'DISBURSEMENT_COMPLETED' and a.kind = 'FEE_REVENUE'), 0)::bigint as disbursement_fee_total
    from ledger_transfers t
    join ledger_postings p on p.transfer_id = t.id
    join ledger_accounts a on a.id = p.account_id
    where t.merchant_id = ${merchantId}
      and t.created_at >= (${dateFrom}::date)::timestamp at time zone 'Asia/Jakarta'
      and t.created_at < (${dateTo}::date + 1)::timestamp at time zone 'Asia/Jakarta'`);
}

// One merchant with money moving every way the report counts: V1 and legacy payments, a refund,
// a disbursement that succeeded and one that failed. Built once, read by several tests.
const shop = await makeMerchant(stack.api.ctx);
const other = await makeMerchant(stack.api.ctx);
const AMOUNTS = [100_000, 250_000, 49_999];
const shopOrders: { ref_code: string; id: string }[] = [];
for (const amount of AMOUNTS) shopOrders.push(await paidOrder(stack, shop, amount));
const legacyOrder = await legacyCreate(shop, `LGC-${randomBytes(4).toString('hex')}`, 80_000);
await simulatePay(stack.sim.url, { reference: legacyOrder.json.data.refCode });
const legacyId = await pool.oneFirst(sql.type(z.object({ id: z.string() }))`select id from orders where ref_code = ${legacyOrder.json.data.refCode}`);
await reaches('orders', legacyId, 'PAID');
const refund = await post(shop, `/v1/orders/${shopOrders[1].ref_code}/refund`, { amount: 30_000 });
await reaches('refunds', refund.json.data.id, 'SUCCEEDED');
const bank = { channel: 'BANK', bank_short_code: 'BCA', account_name: 'Budi Santoso' };
const paidOut = await post(shop, '/v1/disbursements', { ...bank, idempotency_key: randomUUID(), account_number: '1234567890', amount: 50_000 });
await reaches('disbursements', paidOut.json.data.id, 'SUCCESS');
// The simulator refuses account numbers ending in 0000 (docs/simulator.md): FAILED, not counted.
const refused = await post(shop, '/v1/disbursements', { ...bank, idempotency_key: randomUUID(), account_number: '1234560000', amount: 20_000 });
await eventually(async () => (['FAILED', 'SUCCESS'].includes(await statusOf('disbursements', refused.json.data.id)) ? true : undefined), 'second disbursement to finish');
await paidOrder(stack, other, 75_000);

t.test('profits: the current WIB month by default, equal to the ledger', async (t) => {
  const res = await get(shop, '/v1/reports/profits');
  t.equal(res.status, 200, res.text);
  const totals = res.json.data;
  t.same(Object.keys(totals).sort(), PROFIT_FIELDS);
  const today = wibDate(new Date());
  t.equal(totals.date_from, `${today.slice(0, 8)}01`, 'from the first day of the WIB month');
  t.ok(totals.date_to >= today && totals.date_to.slice(0, 7) === today.slice(0, 7), 'to its last day');

  const paid = [...AMOUNTS, 80_000];
  const gross = paid.reduce((a, b) => a + b, 0);
  const mdr = paid.reduce((a, b) => a + mdrOf(b, 70), 0);
  const failed = (await statusOf('disbursements', refused.json.data.id)) === 'FAILED';
  t.ok(failed, 'the second disbursement was refused');
  t.strictSame(totals, {
    date_from: totals.date_from,
    date_to: totals.date_to,
    order_count: 4,
    gross_amount: gross,
    mdr_total: mdr,
    refund_total: 30_000,
    net_amount: gross - mdr - 30_000,
    disbursement_count: 1,
    disbursement_total: 50_000,
    disbursement_fee_total: 2_500,
  }, 'V1 and legacy payments, the succeeded refund, the successful disbursement only');

  const ledger = await ledgerTotals(shop.merchant_id, totals.date_from, totals.date_to);
  t.strictSame(
    { ...ledger, net_amount: ledger.gross_amount - ledger.mdr_total - ledger.refund_total },
    Object.fromEntries(Object.entries(totals).filter(([k]) => !k.startsWith('date_'))),
    'every total equals the postings of its transfers (FEE_REVENUE legs of ORDER_PAYMENT, ...)',
  );

  const past = await get(shop, '/v1/reports/profits?date_from=2020-01-01&date_to=2020-12-31');
  t.match(past.json.data, { date_from: '2020-01-01', date_to: '2020-12-31', order_count: 0, gross_amount: 0, net_amount: 0, disbursement_count: 0 });
  const theirs = (await get(other, `/v1/reports/profits?date_from=${today}&date_to=${today}`)).json.data;
  t.match(theirs, { order_count: 1, gross_amount: 75_000, mdr_total: mdrOf(75_000, 70), refund_total: 0, disbursement_count: 0 }, "each merchant's own");
  await ledgerAudit(t, stack.env);
});

t.test('profits: orders count on their WIB payment day', async (t) => {
  const m = await makeMerchant(stack.api.ctx, { settlement: 'MANUAL' });
  const order = await paidOrder(stack, m, 40_000);
  // 2026-01-31T17:30Z is 2026-02-01 00:30 in WIB. The ledger is history: only paid_at moves.
  await pool.query(sql.unsafe`update orders set paid_at = '2026-01-31T17:30:00Z' where id = ${order.id}`);
  const january = (await get(m, '/v1/reports/profits?date_from=2026-01-01&date_to=2026-01-31')).json.data;
  const february = (await get(m, '/v1/reports/profits?date_from=2026-02-01&date_to=2026-02-01')).json.data;
  t.equal(january.order_count, 0, 'not on the UTC day');
  t.match(february, { order_count: 1, gross_amount: 40_000, mdr_total: mdrOf(40_000, 70), net_amount: 40_000 - mdrOf(40_000, 70) }, 'on the WIB day');
  await ledgerAudit(t, stack.env);
});

t.test('profits: dates are YYYY-MM-DD and in order, else INVALID_BODY naming the parameter', async (t) => {
  const cases: [string, string][] = [
    ['date_from=2026-13-01', 'date_from'],
    ['date_to=2026-02-30', 'date_to'],
    ['date_from=26-01-01', 'date_from'],
    ['date_from=2026-01-01T00:00:00Z', 'date_from'],
    ['date_to=tomorrow', 'date_to'],
    ['date_from=2026-01-01&date_from=2026-01-02', 'date_from'],
    ['date_from=2026-03-01&date_to=2026-02-01', 'date_from'],
  ];
  for (const [query, name] of cases) {
    const res = await get(shop, `/v1/reports/profits?${query}`);
    t.equal(res.status, 400, query);
    t.equal(res.json.error.code, 'INVALID_BODY', query);
    t.match(res.json.error.message, name, `${query}: names ${name}`);
  }
  t.equal((await get(shop, '/v1/reports/profits?date_from=2024-02-29&date_to=2024-02-29')).status, 200, 'a leap day');
});

t.test('export requests: the job record, refusals, the paginated list', async (t) => {
  await csv.stop(); // nothing builds: the records stay QUEUED
  const m = await makeMerchant(stack.api.ctx);
  const res = await requestExport(m, { type: 'orders', date_from: '2026-01-01', date_to: '2026-01-31' });
  t.equal(res.status, 201, res.text);
  t.same(Object.keys(res.json.data).sort(), EXPORT_FIELDS);
  t.match(res.json.data, { id: UUID, type: 'orders', status: 'QUEUED', date_from: '2026-01-01', date_to: '2026-01-31', row_count: null, download_url: null, completed_at: null, error: null, created_at: ISO_Z });
  const open = await requestExport(m, { type: 'balance_history' });
  t.match(open.json.data, { status: 'QUEUED', date_from: null, date_to: null }, 'dates are optional');

  for (const [body, field] of [
    [{ type: 'invoices' }, 'type'],
    [{}, 'type'],
    [{ type: 'orders', date_from: '2026-02-30' }, 'date_from'],
    [{ type: 'orders', date_to: 20260101 }, 'date_to'],
    [{ type: 'orders', date_from: '2026-02-02', date_to: '2026-02-01' }, 'date_from'],
  ] as const) {
    const bad = await requestExport(m, body);
    t.equal(bad.status, 400, JSON.stringify(body));
    t.equal(bad.json.error.code, 'INVALID_BODY');
    t.match(bad.json.error.message, field, `${JSON.stringify(body)}: names ${field}`);
  }
  const manual = await makeMerchant(stack.api.ctx, { settlement: 'MANUAL' });
  for (const type of ['balance_history', 'disbursements']) {
    const refusal = await requestExport(manual, { type });
    t.equal(refusal.status, 403, type);
    t.equal(refusal.json.error.code, 'NOT_WALLET_MERCHANT', `${type} is for WALLET merchants, as its list is`);
  }
  t.equal((await requestExport(manual, { type: 'settlements' })).status, 201, 'a MANUAL merchant exports settlements');

  for (let i = 0; i < 3; i++) await requestExport(m, { type: 'settlements' });
  const page = await get(m, '/v1/reports/exports?page=2&limit=2');
  t.equal(page.status, 200);
  t.same(page.json.meta, { page: 2, limit: 2, total: 5, total_pages: 3 });
  const all = (await get(m, '/v1/reports/exports')).json;
  t.equal(all.meta.limit, 20, 'spec 8 defaults');
  t.equal(all.data[4].id, res.json.data.id, 'newest first');
  t.equal((await get(manual, '/v1/reports/exports')).json.meta.total, 1, "another merchant's exports are not listed");
  t.equal((await get(m, '/v1/reports/exports?limit=101')).json.error.code, 'INVALID_BODY');

  const early = await download(m, res.json.data.id);
  t.equal(early.status, 404, 'not downloadable before it is built (the contract\'s 404)');
  t.equal(early.json.error.code, 'EXPORT_NOT_READY', 'under a code that says it is still being built, not NOT_FOUND');
  t.match(early.json.error.message, /still being built \(QUEUED\)/);
  t.equal(early.headers['retry-after'], '5', 'with when to look again');
  await restartCsv();
  await exportReaches(m, res.json.data.id, 'COMPLETED');
  t.equal((await download(m, res.json.data.id)).status, 200, 'downloadable once COMPLETED');
});

t.test('orders export: one header row, the merchant\'s visible orders, whole Rupiah, ISO 8601 UTC', async (t) => {
  await pool.query(sql.unsafe`insert into orders (id, merchant_id, ref_code, merchant_order_id, api, amount, status, qr_token)
    values (${randomUUID()}, ${shop.merchant_id}, ${`ORD-1-${randomBytes(5).toString('hex')}`}, 'never-confirmed', 'V1', 5000, 'FAILED', ${randomUUID()})`);
  const { record, file, rows } = await exported(shop, { type: 'orders' });
  t.equal(file.headers['content-type'], 'text/csv; charset=utf-8');
  t.match(file.headers['content-disposition'], new RegExp(`^attachment; filename="orders_start_latest_${record.id.slice(0, 8)}\\.csv"$`));
  t.equal(Number(file.headers['content-length']), file.raw.length);
  t.equal(rows[0].join(','), HEADERS.orders, 'one header row');
  const data = rows.slice(1);
  t.equal(record.row_count, data.length);
  t.match(record, { status: 'COMPLETED', completed_at: ISO_Z, error: null });
  const byRef = new Map(data.map((r) => [r[1], r]));
  const expected = [...shopOrders.map((o) => o.ref_code), legacyOrder.json.data.refCode];
  t.same([...byRef.keys()].sort(), expected.sort(), "the merchant's orders only: no other merchant's, no FAILED attempt");
  for (const o of shopOrders) {
    const api = (await get(shop, `/v1/orders/${o.ref_code}`)).json.data;
    const row = byRef.get(o.ref_code)!;
    t.strictSame(
      [row[0], row[2], row[3], row[4], row[5], row[6], row[12], row[13], row[14], row[11]],
      [api.id, api.merchant_order_id, 'V1', 'QRIS', String(api.amount), 'PAID', api.created_at, api.paid_at, api.expires_at ?? '', 'false'],
      `${o.ref_code} as the API shows it`,
    );
  }
  // refunded_amount, mdr_amount, net_amount: the refunded order's refund counts, the MDR is what
  // the payment was charged, and net = amount − MDR − refunded (the MDR is not returned).
  for (const [i, o] of shopOrders.entries()) {
    const api = (await get(shop, `/v1/orders/${o.ref_code}`)).json.data;
    const row = byRef.get(o.ref_code)!;
    const refunded = i === 1 ? 30_000 : 0;
    t.equal(api.refunded_amount, refunded, `${o.ref_code}: the order shows what its refunds took`);
    t.strictSame(row.slice(15), [String(refunded), String(mdrOf(AMOUNTS[i], 70)), String(AMOUNTS[i] - mdrOf(AMOUNTS[i], 70) - refunded)],
      `${o.ref_code}: refunded_amount, mdr_amount, net_amount`);
  }
  const legacy = byRef.get(legacyOrder.json.data.refCode)!;
  t.strictSame(legacy.slice(15), ['0', String(mdrOf(80_000, 70)), String(80_000 - mdrOf(80_000, 70))], 'legacy orders pay the same MDR');
  t.equal(legacy[3], 'LEGACY');
  t.equal(legacy[7], `'=HYPERLINK("x")`, 'a cell a spreadsheet would run as a formula is escaped');
  t.ok(data.every((r) => /^\d+$/.test(r[5]) && ISO_Z.test(r[12])), 'amounts are whole Rupiah, timestamps ISO 8601 UTC');
  // A period reads its refunds in one pass over the merchant's refunds since the period began,
  // and an order paid before migration 105 (no fee kept on it yet) asks the ledger: the same rows.
  await pool.query(sql.unsafe`update orders set mdr_amount = null where ref_code in (${shopOrders[0].ref_code}, ${shopOrders[1].ref_code})`);
  const wibDay = (offsetDays: number) => new Date(Date.now() + 7 * 3_600_000 + offsetDays * 86_400_000).toISOString().slice(0, 10);
  for (const body of [{ type: 'orders' }, { type: 'orders', date_from: wibDay(-1), date_to: wibDay(1) }]) {
    const again = await exported(shop, body);
    t.strictSame(again.rows.slice(1).sort(), [...data].sort(), `${JSON.stringify(body)}: the same rows, refunds and MDR and all`);
  }
  await pool.query(sql.unsafe`update orders set mdr_amount = ${mdrOf(AMOUNTS[0], 70)} where ref_code = ${shopOrders[0].ref_code}`);
  await pool.query(sql.unsafe`update orders set mdr_amount = ${mdrOf(AMOUNTS[1], 70)} where ref_code = ${shopOrders[1].ref_code}`);
  const ranged = await exported(shop, { type: 'orders', date_from: '2020-01-01', date_to: '2020-01-31' });
  t.strictSame(ranged.rows, [HEADERS.orders.split(',')], 'an empty range is the header alone');
  t.equal(ranged.record.row_count, 0);
});

// Postgres writes the file (COPY … WITH (FORMAT csv)) since issue 17; before, csv-stringify wrote
// it from the rows a cursor returned. The file must be that same CSV: each export's rows, read as
// values by the same column table, stringified with the options the build used then.
const stringifiedBefore = async (m: M, type: ExportType) =>
  stringify([...(await selectExportRows(pool, type, { merchantId: m.merchant_id, dateFrom: null, dateTo: null }))], {
    header: true,
    columns: exportColumns(type),
    escape_formulas: true,
    cast: { boolean: (value) => (value ? 'true' : 'false') },
  });

t.test('the CSV Postgres writes is the one csv-stringify wrote: formula starts, quotes, newlines, empty and NULL, negatives', async (t) => {
  const m = await makeMerchant(stack.api.ctx);
  // A fully refunded order: its net_amount is minus the MDR, and the refund is a debit (negative) in the wallet's history.
  // (A second payment leaves the wallet enough to pay the refund back.)
  await paidOrder(stack, m, 50_000);
  const refundedOrder = await paidOrder(stack, m, 10_000);
  const full = await post(m, `/v1/orders/${refundedOrder.ref_code}/refund`, { amount: 10_000 });
  t.ok(full.json?.data?.id, 'the full refund is accepted');
  await reaches('refunds', full.json.data.id, 'SUCCEEDED');
  const awkward: [name: string | null, email: string | null, phone: string | null][] = [
    ['=HYPERLINK("http://x")', '+x@example.com', '-62812'],
    ['+628123', '@mail', '\t0812'],
    ['-Budi', '\rcr@example.com', '\uFF1D1+1'],
    ['@SUM(A1:A2)', '\uFF0Bx', '\uFF0D1'],
    ['\uFF20user', '', null],
    ['Budi "Bos" Santoso', null, ''],
    ['Santoso, Budi', 'a,b@example.com', '0812,3'],
    ['Baris satu\nbaris dua', 'x"y@example.com', 'line\r\nend'],
    ['=1,"2"\n3', "'quoted@example.com", ' =lead space'],
    ['', '', ''],
    [null, null, null],
    ['Ω ünïcödé 😀', '-', '+'],
  ];
  for (const [i, [name, email, phone]] of awkward.entries()) {
    await pool.query(sql.unsafe`
      insert into orders (id, merchant_id, ref_code, merchant_order_id, api, amount, status, qr_token, customer_name, customer_email, customer_phone, vendor_rrn)
      values (${randomUUID()}, ${m.merchant_id}, ${`ORD-9-${randomBytes(5).toString('hex')}`}, ${i % 2 ? `-INV-${i}` : `=INV+${i}`}, 'V1', ${1_000 + i},
              'EXPIRED', ${randomUUID()}, ${name}, ${email}, ${phone}, ${i % 3 === 0 ? `0000${i}` : null})`);
  }
  await pool.query(sql.unsafe`update orders set customer_name = '-refunded' where id = ${refundedOrder.id}`);

  const orders = await exported(m, { type: 'orders' });
  const before = await stringifiedBefore(m, 'orders');
  t.strictSame(orders.rows, parse(before), 'every cell as csv-stringify wrote it');
  t.equal(orders.file.text, before, 'byte for byte: same quoting, one line per row, \\n line ends');
  t.equal(orders.rows.length, 1 + 2 + awkward.length, 'a newline inside a cell does not split its row');

  t.strictSame(
    orders.rows.slice(1).map((r) => r[7]).sort(),
    [`'=HYPERLINK("http://x")`, `'+628123`, `'-Budi`, `'@SUM(A1:A2)`, `'\uFF20user`, 'Budi "Bos" Santoso', 'Santoso, Budi',
      'Baris satu\nbaris dua', `'=1,"2"\n3`, '', '', 'Ω ünïcödé 😀', `'-refunded`, ''].sort(),
    "customer names a spreadsheet would run (=, +, -, @, full-width ＠) get a leading '; quotes, commas and newlines stay in the cell",
  );
  const cells = orders.rows.slice(1).flatMap((r) => [r[8], r[9]]);
  for (const escaped of [`'+x@example.com`, `'@mail`, `'\t0812`, `'\rcr@example.com`, `'\uFF1D1+1`, `'\uFF0Bx`, `'\uFF0D1`, `'-62812`, `'-`, `'+`]) {
    t.ok(cells.includes(escaped), `${JSON.stringify(escaped)}: tab, carriage return and full-width starts are escaped too`);
  }
  t.ok(cells.includes(' =lead space') && cells.includes("'quoted@example.com"), 'other text is left as it is');
  t.ok(orders.rows.slice(1).every((r) => /^('=INV\+|'-INV-|PAY-)/.test(r[2])), 'merchant_order_id is text: escaped too');
  const refunded = orders.rows.find((r) => r[1] === refundedOrder.ref_code)!;
  t.strictSame(refunded.slice(15), ['10000', String(mdrOf(10_000, 70)), String(-mdrOf(10_000, 70))], 'a negative net_amount is a number: not escaped');
  const blank = orders.rows.slice(1).filter((r) => /^'(=|-)INV/.test(r[2]) && r[7] === '' && r[8] === '' && r[9] === '');
  t.equal(blank.length, 2, "'' and NULL are both an empty cell");
  t.notOk(/(^|,)""(,|\n)/m.test(orders.file.text), 'no empty cell is quoted ("")');
  t.ok(orders.rows.slice(1).every((r) => r[11] === 'true' || r[11] === 'false'), 'booleans are true/false');

  const history = await exported(m, { type: 'balance_history' });
  const historyBefore = await stringifiedBefore(m, 'balance_history');
  t.strictSame(history.rows, parse(historyBefore), 'balance history: every cell as csv-stringify wrote it');
  t.equal(history.file.text, historyBefore, 'byte for byte');
  t.ok(history.rows.slice(1).some((r) => /^-\d+$/.test(r[2])), 'the refund is a negative amount, not escaped');
});

t.test('every export type is the CSV csv-stringify wrote', async (t) => {
  const settled = await makeMerchant(stack.api.ctx, { settlement: 'MANUAL' });
  const bca = await pool.oneFirst(sql.type(z.object({ id: z.string() }))`select id from banks where short_code = 'BCA'`);
  await pool.query(sql.unsafe`
    insert into settlements (merchant_id, ref_code, settlement_date, period_start, period_end, gross_amount, mdr_total,
                             refund_total, disbursement_fee, net_payout, order_count, bank_id, account_number, account_name, status)
    values (${settled.merchant_id}, ${`STL-20260301-${randomBytes(2).toString('hex')}`}, '2026-03-01', '2026-02-28T17:00:00Z', '2026-03-01T17:00:00Z',
            10000, 100, 0, 2500, 7400, 1, ${bca}, '-0812', '=Toko, "Maju"', 'PAID')`);
  for (const [m, type] of [[shop, 'orders'], [shop, 'disbursements'], [shop, 'balance_history'], [settled, 'settlements']] as const) {
    const { file } = await exported(m, { type });
    const before = await stringifiedBefore(m, type);
    t.strictSame(parse(file.text), parse(before), `${type}: every cell`);
    t.equal(file.text, before, `${type}: byte for byte`);
  }
});

t.test('the COPY stream: read only as fast as it is consumed; an abort ends it and its connection', async (t) => {
  const applicationName = `kasir-test-copy-${randomBytes(3).toString('hex')}`;
  const sessions = () =>
    pool.oneFirst(sql.type(z.object({ n: z.number() }))`select count(*)::int as n from pg_stat_activity where application_name = ${applicationName}`);
  const abort = new AbortController();
  // ~200 MB of output: far more than the socket and the stream buffer can hold.
  const statement = `copy (select n, repeat('x', 1000) from generate_series(1, 200000) n) to stdout with (format csv)`;
  let buffered = -1;
  const copying = copyOut(statement, { url: stack.env.DATABASE_URL, applicationName, statementTimeoutMs: 60_000, signal: abort.signal }, async (data) => {
    for await (const piece of data) {
      t.ok(piece.length > 0, 'output arrives');
      t.equal(await sessions(), 1, 'the COPY runs on a session of its own, named');
      // The consumer is busy (as during a chunk insert): what piles up is what the stream buffers.
      await new Promise((resolve) => setTimeout(resolve, 300));
      buffered = data.readableLength;
      abort.abort(new Error('heartbeat lost'));
    }
  });
  await t.rejects(copying, { name: 'AbortError' }, 'the abort stops the build');
  t.ok(buffered >= 0 && buffered <= 1 << 20, `while the consumer was busy the stream held ${buffered} bytes (≤ 1 MiB), not the output`);
  await eventually(async () => ((await sessions()) === 0 ? true : undefined), 'the COPY session to end');

  // A consumer that fails mid-COPY: the error is the caller's, and the session goes too.
  const failing = copyOut(statement, { url: stack.env.DATABASE_URL, applicationName, statementTimeoutMs: 60_000 }, async (data) => {
    for await (const piece of data) if (piece) throw new Error('chunk insert failed');
  });
  await t.rejects(failing, /chunk insert failed/);
  await eventually(async () => ((await sessions()) === 0 ? true : undefined), 'the COPY session to end after a failure');

  // The statement_timeout is the COPY's own, not the role's or the pool's.
  const drain = async (data: Readable) => {
    for await (const piece of data) t.ok(piece.length > 0, 'output arrives');
  };
  const timedOut = copyOut(`copy (select pg_sleep(2)) to stdout`, { url: stack.env.DATABASE_URL, applicationName, statementTimeoutMs: 200 }, drain);
  await t.rejects(timedOut, /statement timeout/);
  const rows = await copyOut(`copy (select n from generate_series(1, 5) n) to stdout with (format csv, header)`,
    { url: stack.env.DATABASE_URL, applicationName, statementTimeoutMs: 1_000 }, drain);
  t.equal(rows, 5, "the COPY's row count, without the header");
});

t.test('disbursements and balance history exports match the API', async (t) => {
  const disbursements = await exported(shop, { type: 'disbursements' });
  t.equal(disbursements.rows[0].join(','), HEADERS.disbursements);
  const d = (await get(shop, `/v1/disbursements/${paidOut.json.data.id}`)).json.data;
  const row = disbursements.rows.find((r) => r[0] === d.id)!;
  t.strictSame(
    [row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8], row[11], row[12], row[13], row[14], row[15], row[18], row[20]],
    [d.ref_code, d.idempotency_key, 'API', 'BANK', d.bank_id, 'BCA', '1234567890', 'Budi Santoso', '50000', '2500', '50000', '52500', 'SUCCESS', d.requested_at, d.created_at],
  );
  t.ok(ISO_Z.test(row[19]), 'completed_at');
  t.equal(disbursements.rows.length, 3, 'both disbursements');

  const history = await exported(shop, { type: 'balance_history' });
  t.equal(history.rows[0].join(','), HEADERS.balance_history);
  const api = (await get(shop, '/v1/balance-history?limit=100')).json.data.reverse();
  t.strictSame(
    history.rows.slice(1),
    api.map((m: Record<string, unknown>) =>
      ['id', 'type', 'amount', 'balance_before', 'balance_after', 'reference_type', 'reference_id', 'ref_code', 'description', 'created_at'].map(
        (k) => (m[k] === null ? '' : String(m[k])),
      )),
    'every wallet movement, oldest first, as GET /v1/balance-history shows it',
  );
  const amounts = history.rows.slice(1).map((r) => Number(r[2]));
  t.ok(amounts.some((a) => a < 0), 'debits are negative numbers, not escaped as formulas');
  t.ok(history.rows.slice(2).every((r, i) => r[3] === history.rows[i + 1][4]), "each row's balance_before is the previous balance_after");
  await ledgerAudit(t, stack.env);
});

t.test('settlements export: by settlement day', async (t) => {
  const m = await makeMerchant(stack.api.ctx, { settlement: 'MANUAL' });
  const bca = await pool.oneFirst(sql.type(z.object({ id: z.string() }))`select id from banks where short_code = 'BCA'`);
  for (const [date, gross] of [['2026-03-01', 1_000_000], ['2026-03-02', 500_000], ['2026-04-01', 700_000]] as const) {
    await pool.query(sql.unsafe`
      insert into settlements (merchant_id, ref_code, settlement_date, period_start, period_end, gross_amount, mdr_total,
                               refund_total, disbursement_fee, net_payout, order_count, bank_id, account_number, account_name, status)
      values (${m.merchant_id}, ${`STL-${date.replaceAll('-', '')}-${randomBytes(2).toString('hex')}`}, ${date},
              (${date}::date - 1)::timestamp at time zone 'Asia/Jakarta', (${date}::date)::timestamp at time zone 'Asia/Jakarta',
              ${gross}, ${gross / 100}, 0, 2500, ${gross - gross / 100 - 2500}, 3, ${bca}, '9876543210', 'Toko Maju', 'PAID')`);
  }
  const { rows } = await exported(m, { type: 'settlements', date_from: '2026-03-01', date_to: '2026-03-31' });
  t.equal(rows[0].join(','), HEADERS.settlements);
  t.strictSame(rows.slice(1).map((r) => [r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[12], r[14], r[15], r[16], r[17]]), [
    ['2026-03-01', '2026-02-27T17:00:00.000Z', '2026-02-28T17:00:00.000Z', '3', '1000000', '10000', '0', '2500', '987500', 'BCA', '9876543210', 'Toko Maju', 'PAID'],
    ['2026-03-02', '2026-02-28T17:00:00.000Z', '2026-03-01T17:00:00.000Z', '3', '500000', '5000', '0', '2500', '492500', 'BCA', '9876543210', 'Toko Maju', 'PAID'],
  ], 'March only, oldest first');
});

t.test('downloads: another merchant\'s is 404, a non-UUID is INVALID_ID', async (t) => {
  const { record } = await exported(shop, { type: 'orders' });
  const theirs = await download(other, record.id);
  t.equal(theirs.status, 404);
  t.equal(theirs.json.error.code, 'NOT_FOUND');
  t.equal((await download(shop, randomUUID())).json.error.code, 'NOT_FOUND', 'unknown id');
  const bad = await download(shop, 'not-a-uuid');
  t.equal(bad.status, 400);
  t.equal(bad.json.error.code, 'INVALID_ID');
});

t.test('GET an export by id: download_url once COMPLETED (null before), and export.completed to the default notify URL', async (t) => {
  const receiver = await startCallbackReceiver();
  t.teardown(() => receiver.close());
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const m = await makeMerchant(stack.api.ctx, { notifyUrl: receiver.url, webhookSecret: secret });
  await paidOrder(stack, m, 25_000);
  const res = await requestExport(m, { type: 'orders' });
  t.equal(res.status, 201, res.text);
  t.equal(res.json.data.download_url, null, 'no download_url while QUEUED');
  const id = res.json.data.id;

  // The order's payment also went to that URL: the export's webhook is the one named so.
  const hook = await eventually(async () => receiver.received.find((h) => h.headers['x-kasir-event'] === 'export.completed'), 'export.completed', 60_000);
  const record = await get(m, `/v1/reports/exports/${id}`);
  t.equal(record.status, 200, record.text);
  t.same(Object.keys(record.json.data).sort(), EXPORT_FIELDS);
  t.match(record.json.data, { id, status: 'COMPLETED', row_count: 1, completed_at: ISO_Z });
  t.equal(record.json.data.download_url, `${stack.env.PUBLIC_BASE_URL}/v1/reports/exports/${id}/download`, 'absolute, on the public base URL');
  const file = await call(record.json.data.download_url, { method: 'GET', path: '', headers: { 'x-api-key': m.api_key } });
  t.equal(file.status, 200, 'the URL downloads the file with the API key');
  t.equal(file.text.split('\r\n')[0].split('\n')[0], HEADERS.orders);

  t.strictSame(hook.json, { ...record.json.data, event: 'export.completed', event_id: hook.headers['webhook-id'], event_created_at: hook.json.event_created_at },
    'the webhook body: the export as GET answers it, plus the event, its id and time');
  t.match(hook.json.event_created_at, ISO_Z);
  t.equal(hook.headers['x-signature'], xSignature(secret, hook.body), 'signed with the merchant\'s secret');
  t.same((await get(m, '/v1/reports/exports')).json.data[0], record.json.data, 'the list shows it the same');

  t.equal((await get(other, `/v1/reports/exports/${id}`)).json.error.code, 'NOT_FOUND', 'another merchant\'s is unknown');
  t.equal((await get(m, `/v1/reports/exports/${randomUUID()}`)).json.error.code, 'NOT_FOUND');
  const bad = await get(m, '/v1/reports/exports/not-a-uuid');
  t.equal(bad.status, 400);
  t.equal(bad.json.error.code, 'INVALID_ID');
});

t.test('an export over EXPORT_MAX_ROWS fails at once: FAILED with its reason, no file, export.failed', async (t) => {
  await restartCsv({ EXPORT_MAX_ROWS: '3' });
  t.teardown(() => restartCsv());
  const receiver = await startCallbackReceiver();
  t.teardown(() => receiver.close());
  await pool.query(sql.unsafe`update merchants set notify_url = ${receiver.url} where id = ${shop.merchant_id}`);
  t.teardown(() => pool.query(sql.unsafe`update merchants set notify_url = null where id = ${shop.merchant_id}`));
  const res = await requestExport(shop, { type: 'orders' });
  const failed = await exportReaches(shop, res.json.data.id, 'FAILED');
  t.match(failed, { row_count: null, download_url: null, error: 'The export has more than 3 rows; request a narrower date range', completed_at: ISO_Z });
  const [hook] = await receiver.waitFor(1, 20_000);
  t.equal(hook.headers['x-kasir-event'], 'export.failed');
  t.strictSame(hook.json, { ...failed, event: 'export.failed', event_id: hook.headers['webhook-id'], event_created_at: hook.json.event_created_at }, 'the failed export, its reason, the event');
  const file = await download(shop, failed.id);
  t.equal(file.status, 404);
  t.equal(file.json.error.code, 'EXPORT_FAILED', 'a failed export says so, not NOT_FOUND');
  const chunks = await pool.oneFirst(sql.unsafe`select count(*)::int from export_chunks where export_id = ${failed.id}`);
  t.equal(chunks, 0, 'nothing of the file was kept');
  const small = await exported(other, { type: 'orders' });
  t.equal(small.record.row_count, 1, 'an export within the limit completes');
});

t.test('a repeated or stale build job changes nothing', async (t) => {
  const { record, file } = await exported(shop, { type: 'orders' });
  await sendJob(stack.api.ctx.boss, 'export-build', { export_id: record.id });
  await sendJob(stack.api.ctx.boss, 'export-build', { export_id: randomUUID() });
  const ping = await sendJob(stack.api.ctx.boss, 'ping', { sent_at: Date.now() });
  await eventually(async () => ((await stack.api.ctx.boss.findJobs('ping', { id: ping! }))[0]?.state === 'completed' ? true : undefined), 'the csv worker to answer');
  await eventually(async () => {
    const left = await pool.oneFirst(sql.unsafe`select count(*)::int from pgboss.job where name = 'export-build' and state < 'completed'`);
    return left === 0 ? true : undefined;
  }, 'the repeated jobs to finish');
  const again = await download(shop, record.id);
  t.ok(again.raw.equals(file.raw), 'the same file');
  t.match((await exportReaches(shop, record.id, 'COMPLETED')), { row_count: record.row_count, completed_at: record.completed_at });
});

t.test('retention: the csv group deletes exports older than EXPORT_RETENTION_HOURS, and fails abandoned ones', async (t) => {
  const m = await makeMerchant(stack.api.ctx);
  const old = await exported(m, { type: 'orders' });
  const kept = await exported(m, { type: 'orders' });
  await pool.query(sql.unsafe`update exports set created_at = now() - interval '73 hours' where id = ${old.record.id}`);
  const lost = randomUUID();
  await pool.query(sql.unsafe`insert into exports (id, merchant_id, type, created_at) values (${lost}, ${m.merchant_id}, 'orders', now() - interval '7 hours')`);
  await restartCsv(); // a pass runs at start (default retention 72 hours)
  await eventually(async () => {
    const n = await pool.oneFirst(sql.unsafe`select count(*)::int from exports where id = ${old.record.id}`);
    return n === 0 ? true : undefined;
  }, 'the old export to be deleted');
  const chunks = await pool.oneFirst(sql.unsafe`select count(*)::int from export_chunks where export_id = ${old.record.id}`);
  t.equal(chunks, 0, 'its file went with it');
  t.equal((await download(m, old.record.id)).status, 404);
  t.equal((await download(m, kept.record.id)).status, 200, 'a younger one stays');
  const abandoned = await exportReaches(m, lost, 'FAILED');
  t.match(abandoned.error, /did not finish/);
});
