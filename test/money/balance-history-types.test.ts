// GET /v1/balance-history?type= reads the transfer kind stored on each posting and its total from
// the kept per-day counts (migrations 100-103, issue 35): the filtered pages and totals must be
// exactly the unfiltered history's movements of that type, and the audit must catch a stored kind
// or a kept count that disagrees with the records.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { sql } from '../../db/pool.ts';
import { call, eventually } from '../helpers/http.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { fundWallet, ledgerAudit, paidOrder } from '../helpers/money.ts';
import { ops } from '../helpers/processes.ts';
import { startStack } from '../helpers/stack.ts';

/** A WIB calendar day `days` from today, as the history's date filters take it. */
const wibDay = (days: number) => new Date(Date.now() + 7 * 3_600_000 + days * 86_400_000).toISOString().slice(0, 10);

t.test('filtered history: every type\'s pages and total, alone and with a period, after a failed payout', async (t) => {
  const stack = await startStack(t, { groups: ['vendor', 'disbursement'] });
  const merchant = await makeMerchant(stack.api.ctx);
  const other = await makeMerchant(stack.api.ctx);
  const get = async (query: string, key = merchant.api_key) => {
    const res = await call(stack.api.url, { path: `/v1/balance-history?${query}`, headers: { 'x-api-key': key } });
    t.equal(res.status, 200, `${query}: ${res.text.slice(0, 200)}`);
    return res.json;
  };
  const disburse = async (account: string, status: string) => {
    const res = await call(stack.api.url, {
      path: '/v1/disbursements', headers: { 'x-api-key': merchant.api_key },
      body: { idempotency_key: randomUUID(), channel: 'BANK', bank_short_code: 'BCA', account_number: account, account_name: 'Budi Santoso', amount: 20_000 },
    });
    t.equal(res.status, 201, res.text);
    await eventually(async () => {
      const d = await call(stack.api.url, { path: `/v1/disbursements/${res.json.data.id}`, headers: { 'x-api-key': merchant.api_key } });
      return d.json?.data?.status === status ? true : undefined;
    }, `disbursement to become ${status}`);
  };

  await fundWallet(stack.api.ctx.pool, merchant, 100_000);
  await fundWallet(stack.api.ctx.pool, other, 70_000);
  await paidOrder(stack, merchant, 50_000);
  await fundWallet(stack.api.ctx.pool, merchant, 30_000);
  await paidOrder(stack, merchant, 60_000);
  await disburse('1234560000', 'FAILED'); // a DISBURSEMENT, then its DISBURSEMENT_REVERSAL
  await disburse('1234567890', 'SUCCESS'); // a DISBURSEMENT (its completion leaves the wallet alone)

  const all = await get('limit=100');
  const counts: Record<string, number> = {};
  for (const m of all.data) counts[m.type] = (counts[m.type] ?? 0) + 1;
  t.same(counts, { ADJUSTMENT: 2, ORDER_PAYMENT: 2, DISBURSEMENT: 2, DISBURSEMENT_REVERSAL: 1 }, 'the wallet holds every kind the flows made');

  for (const type of ['ADJUSTMENT', 'ORDER_PAYMENT', 'DISBURSEMENT', 'DISBURSEMENT_REVERSAL', 'REFUND']) {
    const expected = all.data.filter((m: any) => m.type === type);
    const ids: string[] = [];
    for (let page = 1; page <= 3; page++) {
      const res = await get(`type=${type}&limit=1&page=${page}`);
      t.same(res.meta, { page, limit: 1, total: expected.length, total_pages: expected.length }, `${type} page ${page}: meta.total counts the type`);
      ids.push(...res.data.map((m: any) => m.id));
    }
    t.same(ids, expected.map((m: any) => m.id).slice(0, 3), `${type}: the pages are the type's movements, newest first`);
    const period = await get(`type=${type}&limit=100&date_from=${wibDay(-1)}&date_to=${wibDay(1)}`);
    t.same(period.data, expected, `${type} within a period around today: the same movements`);
    t.equal(period.meta.total, expected.length, `${type} within a period: the same total`);
    const before = await get(`type=${type}&limit=100&date_to=${wibDay(-2)}`);
    t.same([before.data, before.meta.total], [[], 0], `${type} before the period: none`);
  }
  const dated = await get(`limit=100&date_from=${wibDay(-1)}`);
  t.equal(dated.meta.total, all.data.length, 'a period without a type is counted from the kept days too');
  t.same((await get('type=ADJUSTMENT', other.api_key)).meta.total, 1, 'another merchant counts only its own');
  await ledgerAudit(t, stack.env);
});

t.test('the full audit flags a posting whose stored kind is not its transfer\'s, and a kept count that is off', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  const pool = stack.api.ctx.pool;
  await fundWallet(pool, merchant, 500);
  await ledgerAudit(t, stack.env);
  const wallet = sql.unsafe`(select id from ledger_accounts where merchant_id = ${merchant.merchant_id} and kind = 'WALLET')`;
  const audit = async () => {
    const res = await ops(stack.env, 'ledger:audit', '--full', '--json');
    return { code: res.code, report: JSON.parse(res.stdout) };
  };

  await t.rejects(pool.query(sql.unsafe`update ledger_postings set transfer_kind = 'REFUND' where account_id = ${wallet}`), /append-only/,
    'a stored kind cannot be edited');
  // As a superuser could: the append-only trigger off, the wallet's posting relabelled.
  await pool.query(sql.unsafe`alter table ledger_postings disable trigger ledger_postings_append_only`);
  await pool.query(sql.unsafe`update ledger_postings set transfer_kind = 'ORDER_PAYMENT' where account_id = ${wallet}`);
  await pool.query(sql.unsafe`alter table ledger_postings enable trigger ledger_postings_append_only`);
  const relabelled = await audit();
  t.equal(relabelled.code, 1, 'exit 1');
  const kind = relabelled.report.problems.filter((p: any) => p.check === 'posting_kind');
  t.equal(kind.length, 1, 'one posting named');
  t.match(kind[0].detail, /posting says ORDER_PAYMENT, its transfer .* is ADJUSTMENT/);
  t.ok(relabelled.report.problems.some((p: any) => p.check === 'posting_counts'), 'its kind\'s kept count no longer matches either');

  await pool.query(sql.unsafe`alter table ledger_postings disable trigger ledger_postings_append_only`);
  await pool.query(sql.unsafe`update ledger_postings set transfer_kind = 'ADJUSTMENT' where account_id = ${wallet}`);
  await pool.query(sql.unsafe`alter table ledger_postings enable trigger ledger_postings_append_only`);
  await pool.query(sql.unsafe`update ledger_posting_counts set n = n + 1 where account_id = ${wallet}`);
  const counted = await audit();
  t.equal(counted.code, 1, 'a kept count one off: exit 1');
  t.match(counted.report.problems, [{ check: 'posting_counts', detail: 'kept 2, postings 1' }]);
  await pool.query(sql.unsafe`update ledger_posting_counts set n = n - 1 where account_id = ${wallet}`);
  t.equal((await audit()).code, 0, 'repaired: clean');

  // The same join of postings to transfers still finds a leg on another merchant's account.
  const other = await makeMerchant(stack.api.ctx);
  await fundWallet(pool, other, 1); // opens its accounts
  await pool.query(sql.unsafe`alter table ledger_postings disable trigger ledger_postings_append_only`);
  await pool.query(sql.unsafe`update ledger_postings set account_id = (select id from ledger_accounts where merchant_id = ${other.merchant_id} and kind = 'WALLET')
    where account_id = ${wallet}`);
  await pool.query(sql.unsafe`alter table ledger_postings enable trigger ledger_postings_append_only`);
  const moved = await audit();
  t.ok(moved.report.problems.some((p: any) => p.check === 'transfer_merchant'), 'a leg on another merchant\'s account is named');
  t.notOk(moved.report.problems.some((p: any) => p.check === 'posting_kind'), 'its kind is still its transfer\'s');
});

t.test('a period\'s page is exact at any age, where a transaction\'s begin and its posting sequence disagree within the hour', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  const pool = stack.api.ctx.pool;
  const get = async (query: string) => {
    const res = await call(stack.api.url, { path: `/v1/balance-history?${query}`, headers: { 'x-api-key': merchant.api_key } });
    t.equal(res.status, 200, `${query}: ${res.text.slice(0, 200)}`);
    return res.json;
  };
  // Eight postings, in sequence order, then given the times of a history (WIB midnight of day
  // D is D 00:00+07). The fifth began 40 minutes before the fourth but waited for the account
  // behind it (its sequence is later): the two straddle the end of day -10 by minutes.
  for (let i = 1; i <= 8; i++) await fundWallet(pool, merchant, 1_000 * i);
  const at = (days: number, hhmm: string) => `${wibDay(days)}T${hhmm}:00+07:00`;
  const times = [at(-30, '10:00'), at(-12, '09:00'), at(-11, '12:00'), at(-9, '00:20'), at(-10, '23:40'), at(-9, '15:00'), at(-3, '08:00'), at(0, '00:01')];
  const wallet = sql.unsafe`(select id from ledger_accounts where merchant_id = ${merchant.merchant_id} and kind = 'WALLET')`;
  await pool.query(sql.unsafe`alter table ledger_postings disable trigger ledger_postings_append_only`);
  await pool.query(sql.unsafe`
    update ledger_postings p set created_at = t.at::timestamptz
    from (select seq, row_number() over (order by seq) as n from ledger_postings where account_id = ${wallet}) s
    join unnest(${sql.array(times, 'text')}::text[]) with ordinality as t(at, n) on t.n = s.n
    where p.seq = s.seq`);
  await pool.query(sql.unsafe`alter table ledger_postings enable trigger ledger_postings_append_only`);

  const all = (await get('limit=100')).data as { id: string; amount: number; created_at: string }[];
  t.equal(all.length, 8);
  const within = (from: number, to: number) => {
    const start = Date.parse(`${wibDay(from)}T00:00:00+07:00`);
    const end = Date.parse(`${wibDay(to + 1)}T00:00:00+07:00`);
    return all.filter((m) => Date.parse(m.created_at) >= start && Date.parse(m.created_at) < end).map((m) => m.amount);
  };
  for (const [from, to] of [[-12, -11], [-10, -10], [-9, -9], [-11, -9], [-40, -20], [-2, 0], [-30, 0], [5, 9], [-60, -50]]) {
    const page = await get(`limit=100&date_from=${wibDay(from)}&date_to=${wibDay(to)}`);
    t.same(page.data.map((m: { amount: number }) => m.amount), within(from, to), `days ${from}..${to}: exactly the postings begun in them, newest first`);
  }
  t.same((await get(`limit=100&date_from=${wibDay(-10)}`)).data.map((m: { amount: number }) => m.amount), within(-10, 0), 'from a day on');
  t.same((await get(`limit=100&date_to=${wibDay(-10)}`)).data.map((m: { amount: number }) => m.amount), within(-400, -10), 'up to a day');
  const paged = [];
  for (let page = 1; page <= 3; page++) paged.push(...(await get(`limit=1&page=${page}&date_from=${wibDay(-12)}&date_to=${wibDay(-9)}`)).data.map((m: { amount: number }) => m.amount));
  t.same(paged, within(-12, -9).slice(0, 3), 'paged one by one: the same order');
});
