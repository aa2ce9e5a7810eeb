// CSV import of disbursements (POST /v1/disbursements/import) through real HTTP with real
// multipart uploads (the platform's FormData and Blob), a real Postgres, and the real
// disbursement worker process sending to the simulator gateway. An import's money is one
// DISBURSEMENT_IMPORT transfer; the wallet is locked only for the decision at its end, so the
// merchant's payment credits and single disbursements go through while a file is imported.
// Every test ends with the ledger audit.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { mdrOf } from '../../db/money-rules.ts';
import { sql } from '../../db/pool.ts';
import { call, eventually } from '../helpers/http.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { balanceOf, fundWallet, ledgerAudit } from '../helpers/money.ts';
import { xSignature } from '../helpers/order-lifecycle.ts';
import { ops } from '../helpers/processes.ts';
import { simulatePay } from '../helpers/simulator.ts';
import { startStack, type Stack } from '../helpers/stack.ts';

type M = Awaited<ReturnType<typeof makeMerchant>>;
type Row = Partial<Record<(typeof COLUMNS)[number], string | number>>;

const COLUMNS = ['channel', 'bank_short_code', 'account_number', 'account_name', 'ewallet_provider', 'ewallet_phone', 'amount', 'notify_url'] as const;

const bank = (amount: number | string, account = '1234567890', extra: Row = {}): Row =>
  ({ channel: 'BANK', bank_short_code: 'BCA', account_number: account, account_name: 'Budi Santoso', amount, ...extra });
const ewallet = (amount: number | string, extra: Row = {}): Row =>
  ({ channel: 'EWALLET', ewallet_provider: 'OVO', ewallet_phone: '0812-3456-7890', amount, ...extra });

function cell(value: string, delimiter: string): string {
  return /["\r\n]/.test(value) || value.includes(delimiter) ? `"${value.replaceAll('"', '""')}"` : value;
}

/** A CSV as a spreadsheet would export it. `null` rows are blank lines. */
function csv(rows: (Row | null)[], options: { delimiter?: string; bom?: boolean; eol?: string; columns?: readonly string[] } = {}): string {
  const d = options.delimiter ?? ',';
  const eol = options.eol ?? '\n';
  const columns = options.columns ?? COLUMNS;
  const lines = [columns.join(d), ...rows.map((r) => (r === null ? '' : columns.map((c) => cell(String(r[c.toLowerCase() as keyof Row] ?? ''), d)).join(d)))];
  return `${options.bom ? '\uFEFF' : ''}${lines.join(eol)}${eol}`;
}

interface Upload {
  file?: string | Uint8Array | null;
  prefix?: string | null;
  filename?: string;
}

async function upload(stack: Stack, merchant: M, u: Upload) {
  const form = new FormData();
  if (u.file !== null && u.file !== undefined) form.set('file', new Blob([u.file], { type: 'text/csv' }), u.filename ?? 'payouts.csv');
  if (u.prefix !== null && u.prefix !== undefined) form.set('idempotency_prefix', u.prefix);
  const res = await fetch(`${stack.api.url}/v1/disbursements/import`, { method: 'POST', headers: { 'x-api-key': merchant.api_key }, body: form });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json };
}

function getDisbursement(stack: Stack, merchant: M, id: string) {
  return call(stack.api.url, { path: `/v1/disbursements/${id}`, headers: { 'x-api-key': merchant.api_key } });
}

function reaches(stack: Stack, merchant: M, id: string, status: string, deadlineMs = 15_000) {
  return eventually(async () => {
    const res = await getDisbursement(stack, merchant, id);
    return res.json?.data?.status === status ? res.json.data : undefined;
  }, `disbursement ${id} to become ${status}`, deadlineMs);
}

/**
 * What the merchant's disbursements wrote: rows, import records, debit transfers (`debits`: one
 * DISBURSEMENT per single create; `importDebits`: one DISBURSEMENT_IMPORT per import that
 * accepted rows), what those debits took from the wallet, and execute jobs.
 */
async function written(stack: Stack, merchantId: string): Promise<{ disbursements: number; imports: number; debits: number; importDebits: number; debited: number; jobs: number }> {
  return stack.api.ctx.pool.one(sql.unsafe`
    select (select count(*)::int from disbursements where merchant_id = ${merchantId}) as disbursements,
           (select count(*)::int from disbursement_imports where merchant_id = ${merchantId}) as imports,
           (select count(*)::int from ledger_transfers where merchant_id = ${merchantId} and kind = 'DISBURSEMENT') as debits,
           (select count(*)::int from ledger_transfers where merchant_id = ${merchantId} and kind = 'DISBURSEMENT_IMPORT') as import_debits,
           (select coalesce(-sum(p.amount), 0)::int from ledger_postings p
              join ledger_transfers t on t.id = p.transfer_id join ledger_accounts a on a.id = p.account_id
              where t.merchant_id = ${merchantId} and t.kind in ('DISBURSEMENT', 'DISBURSEMENT_IMPORT') and a.kind = 'WALLET') as debited,
           (select count(*)::int from pgboss.job j
              where j.name = 'disbursement-execute'
                and (j.data->>'disbursement_id')::uuid in (select id from disbursements where merchant_id = ${merchantId})) as jobs`)
    .then((r: any) => ({ disbursements: r.disbursements, imports: r.imports, debits: r.debits, importDebits: r.import_debits, debited: r.debited, jobs: r.jobs }));
}

/** The merchant's wallet movements through the API, oldest first. */
async function movements(stack: Stack, merchant: M): Promise<any[]> {
  const res = await call(stack.api.url, { path: '/v1/balance-history?limit=100', headers: { 'x-api-key': merchant.api_key } });
  if (res.status !== 200) throw new Error(`balance history: ${res.status} ${res.text}`);
  return [...res.json.data].reverse();
}

t.test('a file of bank and e-wallet rows is debited at once, executed by the worker, and a retry creates nothing twice', async (t) => {
  const stack = await startStack(t, { groups: ['disbursement'] });
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(stack.api.ctx.pool, merchant, 1_000_000);
  const file = csv([bank(100_000), ewallet(20_000), null, bank(50_000, '1234560000', { account_name: 'Closed, Account' }), bank('30000', '9876543210', { bank_short_code: 'bni' })]);
  const res = await upload(stack, merchant, { file, prefix: 'payroll-2026-11' });
  t.equal(res.status, 200, res.text);
  const data = res.json.data;
  t.match(data, {
    import_id: /^[0-9a-f-]{36}$/, idempotency_prefix: 'payroll-2026-11', rows: 5, accepted: 4, already_imported: 0, refused: 0, skipped: 1,
    queued: 4, total_debit: 102_500 + 21_000 + 52_500 + 32_500,
  });
  t.same(data.results.map((r: any) => [r.row, r.idempotency_key, r.status]), [
    [1, 'payroll-2026-11-1', 'ACCEPTED'],
    [2, 'payroll-2026-11-2', 'ACCEPTED'],
    [3, 'payroll-2026-11-3', 'SKIPPED'],
    [4, 'payroll-2026-11-4', 'ACCEPTED'],
    [5, 'payroll-2026-11-5', 'ACCEPTED'],
  ]);
  t.match(data.results[0], { disbursement_id: /^[0-9a-f-]{36}$/, ref_code: /^DSB-\d+-[0-9A-Z]+$/, disbursement_status: 'PENDING', total_debit: 102_500 });
  t.equal(await balanceOf(stack, merchant), 1_000_000 - data.total_debit, 'the whole file is debited in the import');
  t.same((await movements(stack, merchant)).slice(0, 2).map((m) => [m.type, m.amount, m.reference_type, m.reference_id]), [
    ['ADJUSTMENT', 1_000_000, 'ADJUSTMENT', (await movements(stack, merchant))[0].reference_id],
    ['DISBURSEMENT_IMPORT', -data.total_debit, 'DISBURSEMENT_IMPORT', data.import_id],
  ], 'by one transfer that refers to the import');
  t.match(await written(stack, merchant.merchant_id), { disbursements: 4, debits: 0, importDebits: 1, debited: data.total_debit, jobs: 4 });

  const first = (await getDisbursement(stack, merchant, data.results[0].ref_code)).json.data;
  t.match(first, { idempotency_key: 'payroll-2026-11-1', channel: 'BANK', account_number: '1234567890', request_amount: 100_000, fee: 2_500, total_debit: 102_500, source: 'IMPORT' });
  const wallet = (await getDisbursement(stack, merchant, data.results[1].disbursement_id)).json.data;
  t.match(wallet, { channel: 'EWALLET', ewallet_provider: 'OVO', ewallet_phone: '6281234567890', fee: 1_000, bank_id: null });
  t.match((await getDisbursement(stack, merchant, data.results[4].disbursement_id)).json.data, { account_number: '9876543210', request_amount: 30_000 });

  // The real worker sends every row; the closed account fails and its debit comes back.
  for (const i of [0, 1, 4]) await reaches(stack, merchant, data.results[i].disbursement_id, 'SUCCESS');
  await reaches(stack, merchant, data.results[3].disbursement_id, 'FAILED');
  t.equal(await balanceOf(stack, merchant), 1_000_000 - 102_500 - 21_000 - 32_500, 'the failed row was reversed, once');

  const before = await written(stack, merchant.merchant_id);
  const again = await upload(stack, merchant, { file, prefix: 'payroll-2026-11' });
  t.equal(again.status, 200, again.text);
  t.match(again.json.data, { rows: 5, accepted: 0, already_imported: 4, refused: 0, skipped: 1, queued: 0, total_debit: 0 });
  for (const i of [0, 1, 3, 4]) {
    t.match(again.json.data.results[i], {
      status: 'ALREADY_IMPORTED', disbursement_id: data.results[i].disbursement_id, ref_code: data.results[i].ref_code,
    }, `row ${i + 1} answers with the disbursement the first import made`);
  }
  t.equal(again.json.data.results[3].disbursement_status, 'FAILED', 'with its status now');
  const after = await written(stack, merchant.merchant_id);
  t.same({ ...after, imports: after.imports - 1 }, before, 'no disbursement, debit or job twice (the retry is recorded as an import)');
  t.equal(await balanceOf(stack, merchant), 1_000_000 - 102_500 - 21_000 - 32_500);
  await ledgerAudit(t, stack.env);
});

// Issue 37: the name rule holds for imported rows too; each failed row's debit comes back on its own.
t.test('an imported row whose holder the bank names otherwise is FAILED ACCOUNT_NAME_MISMATCH; its debit comes back', async (t) => {
  const stack = await startStack(t, { groups: ['disbursement'] });
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(stack.api.ctx.pool, merchant, 1_000_000);
  const file = csv([bank(100_000, '1234568888', { account_name: 'Budi Santoso' }), bank(50_000, '3141592653', { account_name: 'Rizky Pratama' })]);
  const res = await upload(stack, merchant, { file, prefix: 'names-1' });
  t.equal(res.status, 200, res.text);
  const [mismatch, madeUp] = res.json.data.results;
  const failed = await reaches(stack, merchant, mismatch.disbursement_id, 'FAILED');
  t.equal(failed.failure_reason, 'ACCOUNT_NAME_MISMATCH');
  await reaches(stack, merchant, madeUp.disbursement_id, 'SUCCESS');
  t.equal(await balanceOf(stack, merchant), 1_000_000 - 52_500, 'only the paid row stays debited');
  await ledgerAudit(t, stack.env);
});

t.test('every row is checked with exactly the rules (codes and messages) of POST /v1/disbursements', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(stack.api.ctx.pool, merchant, 10_000);
  t.equal((await ops(stack.env, 'banks:disable', '--code', 'PANIN')).code, 0);
  const cases: [string, Row, string][] = [
    ['no channel', { ...bank(1_000), channel: '' }, 'INVALID_BODY'],
    ['unknown channel', { ...bank(1_000), channel: 'CASH' }, 'INVALID_BODY'],
    ['lower-case channel', { ...bank(1_000), channel: 'bank' }, 'INVALID_BODY'],
    ['account number with letters', bank(1_000, '12345abc'), 'INVALID_BODY'],
    ['no account_name', { ...bank(1_000), account_name: '' }, 'MISSING_BANK_INFO'],
    ['no account_number', { ...bank(1_000), account_number: '' }, 'MISSING_BANK_INFO'],
    ['no bank_short_code', { ...bank(1_000), bank_short_code: '' }, 'MISSING_BANK_INFO'],
    ['no ewallet_phone', { ...ewallet(1_000), ewallet_phone: '' }, 'MISSING_EWALLET_INFO'],
    ['no ewallet_provider', { ...ewallet(1_000), ewallet_provider: '' }, 'MISSING_EWALLET_INFO'],
    ['unknown bank', { ...bank(1_000), bank_short_code: 'NOPE' }, 'BANK_NOT_FOUND'],
    ['disabled bank', { ...bank(1_000), bank_short_code: 'PANIN' }, 'BANK_DISABLED'],
    ['unknown e-wallet', { ...ewallet(1_000), ewallet_provider: 'PAYPAL' }, 'INVALID_BODY'],
    ['not a phone number', { ...ewallet(1_000), ewallet_phone: '12345' }, 'INVALID_BODY'],
    ['notify_url not http', bank(1_000, '1234567890', { notify_url: 'ftp://hooks.example.com/kasir' }), 'INVALID_BODY'],
    ['notify_url at the metadata service', bank(1_000, '1234567890', { notify_url: 'http://169.254.169.254/latest' }), 'INVALID_BODY'],
    ['decimal amount', bank('1.5'), 'INVALID_BODY'],
    ['thousands separator', bank('1,000'), 'INVALID_BODY'],
    ['letters', bank('abc'), 'INVALID_BODY'],
    ['zero', bank('0'), 'INVALID_BODY'],
    ['negative', bank('-5'), 'INVALID_BODY'],
    ['no amount', bank(''), 'INVALID_BODY'],
    ['past 2^53', bank('99999999999999999999'), 'INVALID_BODY'],
    ['above the per-transaction limit', bank(100_000_001), 'AMOUNT_EXCEEDS_LIMIT'],
    ['bank checked before amount', { ...bank('0'), bank_short_code: 'NOPE' }, 'BANK_NOT_FOUND'],
  ];
  const file = csv([...cases.map(([, row]) => row), bank(7_500)]) + 'BANK,BCA,1234567890\n';
  const res = await upload(stack, merchant, { file, prefix: 'rules' });
  t.equal(res.status, 200, res.text);
  const results = res.json.data.results;
  t.match(res.json.data, { rows: cases.length + 2, accepted: 1, refused: cases.length + 1 });
  for (const [index, [what, row, code]] of cases.entries()) {
    t.equal(results[index].status, 'REFUSED', `${what}: refused`);
    t.equal(results[index].error.code, code, `${what}: ${code}`);
    // The same fields as a JSON body (digits-only amounts as numbers, anything else as sent).
    const body: Record<string, unknown> = { idempotency_key: `json-${index}` };
    for (const [name, value] of Object.entries(row)) {
      if (value === '') continue;
      body[name] = name === 'amount' && /^\d+$/.test(String(value)) ? Number(value) : value;
    }
    const json = await call(stack.api.url, { path: '/v1/disbursements', headers: { 'x-api-key': merchant.api_key }, body });
    // Code and message (the JSON answer's envelope may add fields of its own, such as a request id).
    t.same(results[index].error, { code: json.json.error.code, message: json.json.error.message }, `${what}: the JSON endpoint answers the same code and message`);
  }
  t.match(results.at(-2), { status: 'ACCEPTED', total_debit: 10_000 }, 'a valid row among them is accepted');
  t.match(results.at(-1), { status: 'REFUSED', error: { code: 'INVALID_BODY', message: 'row has 3 fields; the header has 8' } });
  t.match((await written(stack, merchant.merchant_id)), { disbursements: 1, debits: 0, importDebits: 1, debited: 10_000, jobs: 1 }, 'refused rows write nothing');
  t.equal(await balanceOf(stack, merchant), 0);
  await ledgerAudit(t, stack.env);
});

t.test('a row key already used: the same row is ALREADY_IMPORTED, another payment under it is DUPLICATE_IDEMPOTENCY_KEY', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(stack.api.ctx.pool, merchant, 100_000);
  const json = await call(stack.api.url, { path: '/v1/disbursements', headers: { 'x-api-key': merchant.api_key }, body: { idempotency_key: 'batch-1', ...bank(10_000) } });
  t.equal(json.status, 201);
  const taken = await call(stack.api.url, { path: '/v1/disbursements', headers: { 'x-api-key': merchant.api_key }, body: { idempotency_key: 'batch-2', ...bank(10_000) } });
  const res = await upload(stack, merchant, { file: csv([bank(10_000), bank(20_000), bank(5_000)]), prefix: '  batch ' });
  t.equal(res.status, 200, res.text);
  t.equal(res.json.data.idempotency_prefix, 'batch', 'the prefix is trimmed');
  t.match(res.json.data.results, [
    { row: 1, status: 'ALREADY_IMPORTED', ref_code: json.json.data.ref_code, disbursement_status: 'PENDING' },
    { row: 2, status: 'REFUSED', error: { code: 'DUPLICATE_IDEMPOTENCY_KEY', message: `batch-2 is already used by ${taken.json.data.ref_code}, for another destination or amount` } },
    { row: 3, status: 'ACCEPTED', idempotency_key: 'batch-3' },
  ]);
  t.equal(await balanceOf(stack, merchant), 100_000 - 2 * 12_500 - 7_500);
  await ledgerAudit(t, stack.env);
});

t.test('one balance decision: rows are accepted in file order until one does not fit; a top-up and a retry take the rest', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(stack.api.ctx.pool, merchant, 50_000);
  // 4 × 12,500 fit exactly; row 3 is invalid and costs nothing; row 6 is smaller but comes after the stop.
  const file = csv([bank(10_000), bank(10_000), bank(10_000, '1234567890', { bank_short_code: 'NOPE' }), bank(10_000), bank(10_000), bank(20_000), bank(1_000)]);
  const res = await upload(stack, merchant, { file, prefix: 'tail' });
  t.equal(res.status, 200, res.text);
  const { data } = res.json;
  t.match(data, { rows: 7, accepted: 4, refused: 3, queued: 4, total_debit: 50_000 });
  t.same(data.results.map((r: any) => r.error?.code ?? r.status), ['ACCEPTED', 'ACCEPTED', 'BANK_NOT_FOUND', 'ACCEPTED', 'ACCEPTED', 'INSUFFICIENT_BALANCE', 'INSUFFICIENT_BALANCE']);
  t.match(data.results[5].error.message, /balance left after the rows above \(0\) is below this row's amount plus fee \(22500\)/);
  t.match(data.results[6].error.message, /row 6 was the first the balance could not cover/, 'the tail names the row that stopped it');
  t.equal(await balanceOf(stack, merchant), 0, 'exactly the balance, never more');

  await fundWallet(stack.api.ctx.pool, merchant, 30_000);
  const retry = await upload(stack, merchant, { file, prefix: 'tail' });
  t.same(retry.json.data.results.map((r: any) => r.error?.code ?? r.status),
    ['ALREADY_IMPORTED', 'ALREADY_IMPORTED', 'BANK_NOT_FOUND', 'ALREADY_IMPORTED', 'ALREADY_IMPORTED', 'ACCEPTED', 'ACCEPTED']);
  t.equal(await balanceOf(stack, merchant), 30_000 - 22_500 - 3_500);
  t.match(await written(stack, merchant.merchant_id), { disbursements: 6, imports: 2, debits: 0, importDebits: 2, debited: 50_000 + 26_000, jobs: 6 });
  await ledgerAudit(t, stack.env);
});

t.test('the daily limit counts earlier disbursements and the rows above; review holds big rows unqueued', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(stack.api.ctx.pool, merchant, 1_000_000);
  t.equal((await ops(stack.env, 'merchant:set-fees', '--merchant', merchant.merchant_id, '--daily-limit', '100000', '--review-threshold', '30000')).code, 0);
  const json = await call(stack.api.url, { path: '/v1/disbursements', headers: { 'x-api-key': merchant.api_key }, body: { idempotency_key: randomUUID(), ...bank(20_000) } });
  t.equal(json.status, 201);
  const res = await upload(stack, merchant, { file: csv([bank(30_000), bank(40_000), bank(10_001), bank(1)]), prefix: 'daily' });
  t.same(res.json.data.results.map((r: any) => r.error?.code ?? r.disbursement_status),
    ['PENDING', 'IN_REVIEW', 'DAILY_LIMIT_EXCEEDED', 'DAILY_LIMIT_EXCEEDED']);
  t.match(res.json.data.results[2].error.message, /today's disbursements so far \(90000, rows above included\)/);
  t.match(res.json.data.results[3].error.message, /row 3 was the first the daily limit could not cover/);
  t.match(res.json.data, { accepted: 2, queued: 1 });
  t.match(await written(stack, merchant.merchant_id), { disbursements: 3, jobs: 2 }, 'the row in review has no job yet');
  await ledgerAudit(t, stack.env);
});

t.test('spreadsheet exports: semicolons, a BOM, CRLF, quoted cells, columns in any order, header case', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(stack.api.ctx.pool, merchant, 1_000_000);
  const rows = [bank(10_000, '1234567890', { account_name: 'Santoso; Budi "B"' }), ewallet(5_000)];
  const semicolon = csv(rows, { delimiter: ';', bom: true, eol: '\r\n' });
  const res = await upload(stack, merchant, { file: semicolon, prefix: 'semi' });
  t.equal(res.status, 200, res.text);
  t.match(res.json.data, { accepted: 2, refused: 0 });
  const named = (await getDisbursement(stack, merchant, res.json.data.results[0].disbursement_id)).json.data;
  t.equal(named.account_name, 'Santoso; Budi "B"', 'quoted delimiter and quotes survive');

  const reordered = csv([bank(1_000)], { columns: ['AMOUNT', 'Account_Name', 'account_number', 'bank_short_code', 'channel', 'notify_url', 'ewallet_phone', 'ewallet_provider', ''] });
  const other = await upload(stack, merchant, { file: reordered, prefix: 'order' });
  t.equal(other.status, 200, other.text);
  t.match(other.json.data.results[0], { status: 'ACCEPTED', total_debit: 3_500 });
  const bomComma = await upload(stack, merchant, { file: csv([bank(2_000)], { bom: true }), prefix: 'bom' });
  t.match(bomComma.json.data, { accepted: 1 });
  await ledgerAudit(t, stack.env);
});

t.test('an unreadable file or form is a clear 400 INVALID_FILE and writes nothing', async (t) => {
  const stack = await startStack(t, { groups: [], env: { IMPORT_MAX_BYTES: '4096', IMPORT_MAX_ROWS: '5' } });
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(stack.api.ctx.pool, merchant, 1_000_000);
  const good = csv([bank(1_000)]);
  const png = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52, 0xff, 0xfe]);
  const latin1 = Uint8Array.from([...Buffer.from(good.replace('Budi Santoso', 'Jos')), 0xe9]);
  const cases: [string, Upload, RegExp, number?][] = [
    ['no file part', { prefix: 'p' }, /file: is required/],
    ['no prefix', { file: good }, /idempotency_prefix: is required/],
    ['a blank prefix', { file: good, prefix: '   ' }, /idempotency_prefix: is required/],
    ['neither', {}, /file: is required.*idempotency_prefix: is required/],
    ['a prefix too long', { file: good, prefix: 'x'.repeat(201) }, /idempotency_prefix: must be at most 200 characters/],
    ['an empty file', { file: '', prefix: 'p' }, /file: is empty/],
    ['a header only', { file: csv([]), prefix: 'p' }, /no data rows/],
    ['missing and unknown columns', { file: 'channel,bank,amount,account_number,account_name,ewallet_provider,ewallet_phone\nBANK,BCA,1000,123456,X,,\n', prefix: 'p' },
      /header row: missing columns bank_short_code, notify_url; unknown column bank/],
    ['a repeated column', { file: csv([bank(1)], { columns: [...COLUMNS, 'amount'] }), prefix: 'p' }, /repeated column amount/],
    ['bad quoting', { file: `${COLUMNS.join(',')}\nBANK,BCA,"1234567890,Budi,,,1000,\n`, prefix: 'p' }, /not valid CSV: Quote Not Closed/],
    ['a stray quote', { file: `${COLUMNS.join(',')}\nBANK,BCA,12"34,Budi,,,1000,\n`, prefix: 'p' }, /not valid CSV/],
    ['a binary file', { file: png, prefix: 'p', filename: 'payouts.png' }, /not UTF-8 text/],
    ['Latin-1 text', { file: latin1, prefix: 'p' }, /not UTF-8 text/],
    ['NUL bytes', { file: `${good}\u0000`, prefix: 'p' }, /NUL bytes/],
    ['too many rows', { file: csv(Array.from({ length: 6 }, () => bank(1_000))), prefix: 'p' }, /6 data rows; an import takes at most 5/],
    ['too large', { file: good + 'x'.repeat(5000), prefix: 'p' }, /^file: larger than 4 KiB$/, 413],
  ];
  for (const [what, u, message, status] of cases) {
    const res = await upload(stack, merchant, u);
    t.equal(res.status, status ?? 400, `${what}: HTTP ${status ?? 400}`);
    t.equal(res.json?.error?.code, 'INVALID_FILE', `${what}: INVALID_FILE`);
    t.match(res.json?.error?.message, message, `${what}: says what is wrong (${res.json?.error?.message})`);
  }
  const notMultipart = await call(stack.api.url, { path: '/v1/disbursements/import', headers: { 'x-api-key': merchant.api_key }, body: { file: good, idempotency_prefix: 'p' } });
  t.equal(notMultipart.status, 400);
  t.same({ code: notMultipart.json.error.code, message: notMultipart.json.error.message }, { code: 'INVALID_FILE', message: 'body must be multipart/form-data' });
  const huge = await fetch(`${stack.api.url}/v1/disbursements/import`, {
    method: 'POST', headers: { 'x-api-key': merchant.api_key, 'content-type': 'multipart/form-data; boundary=x' }, body: new Uint8Array(2 * 1024 * 1024),
  });
  t.equal(huge.status, 413, 'a declared length far past the limit is refused unread');
  t.match(await written(stack, merchant.merchant_id), { disbursements: 0, imports: 0, debits: 0, importDebits: 0, jobs: 0 }, 'nothing written');
  t.equal(await balanceOf(stack, merchant), 1_000_000);
  t.equal((await upload(stack, merchant, { file: good, prefix: 'p' })).status, 200, 'the server still takes a good file');
  await ledgerAudit(t, stack.env);
});

t.test('WALLET merchants only; the API key first', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const manual = await makeMerchant(stack.api.ctx, { settlement: 'MANUAL' });
  const refused = await upload(stack, manual, { file: csv([bank(1_000)]), prefix: 'p' });
  t.equal(refused.status, 403);
  t.equal(refused.json.error.code, 'NOT_WALLET_MERCHANT');
  const anonymous = await upload(stack, { ...manual, api_key: 'f'.repeat(64) }, { file: csv([bank(1_000)]), prefix: 'p' });
  t.equal(anonymous.status, 401);
  t.equal(anonymous.json.error.code, 'UNAUTHORIZED');
  await ledgerAudit(t, stack.env);
});

t.test('the same file uploaded twice at once is imported once', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(stack.api.ctx.pool, merchant, 1_000_000);
  const file = csv(Array.from({ length: 50 }, (_, i) => bank(1_000 + i)));
  const [a, b] = await Promise.all([upload(stack, merchant, { file, prefix: 'race' }), upload(stack, merchant, { file, prefix: 'race' })]);
  t.same([a.json.data.accepted + b.json.data.accepted, a.json.data.already_imported + b.json.data.already_imported], [50, 50], 'one took every row, the other found them');
  const debited = Array.from({ length: 50 }, (_, i) => 3_500 + i).reduce((x, y) => x + y, 0);
  t.match(await written(stack, merchant.merchant_id), { disbursements: 50, imports: 2, debits: 0, importDebits: 1, debited, jobs: 50 });
  t.equal(await balanceOf(stack, merchant), 1_000_000 - debited);
  await ledgerAudit(t, stack.env);
});

/** Whether a transaction other than the caller's holds rows written into disbursements (uncommitted). */
async function importWriting(stack: Stack): Promise<boolean> {
  return (await stack.api.ctx.pool.oneFirst(sql.unsafe`
    select exists (
      select 1 from pg_locks l join pg_class c on c.oid = l.relation
      where l.database = (select oid from pg_database where datname = current_database())
        and c.relname = 'disbursements' and l.mode = 'RowExclusiveLock' and l.granted and l.pid <> pg_backend_pid()
    ) as writing`)) as boolean;
}

/** The import's rows other sessions can see: none until it commits. */
async function committedImportRows(stack: Stack, merchant: M): Promise<number> {
  return (await stack.api.ctx.pool.oneFirst(sql.unsafe`
    select count(*)::int as n from disbursements where merchant_id = ${merchant.merchant_id} and import_id is not null`)) as number;
}

/** An upload whose answer is awaited later; `answered` says whether it has come yet. */
function running(stack: Stack, merchant: M, u: Upload) {
  const state = { answered: false };
  const answer = upload(stack, merchant, u).finally(() => (state.answered = true));
  return { state, answer };
}

const payroll = (rows: number, amount: (i: number) => number) => Array.from({ length: rows }, (_, i) => bank(amount(i), String(1_000_000_000 + i)));

t.test('a payment credit for the same merchant during a large import completes while the import is still running', async (t) => {
  const stack = await startStack(t, { groups: ['vendor'] });
  const merchant = await makeMerchant(stack.api.ctx);
  const rows = payroll(30_000, (i) => 10_000 + (i % 100));
  const total = rows.reduce((sum, r) => sum + Number(r.amount) + 2_500, 0);
  await fundWallet(stack.api.ctx.pool, merchant, total);
  // An order waiting for its payer, made before the upload.
  const body = JSON.stringify({ merchant_order_id: `credit-${randomUUID()}`, amount: 50_000, payment_method: 'QRIS' });
  const headers: Record<string, string> = { 'x-api-key': merchant.api_key };
  if (merchant.webhook_secret) headers['x-signature'] = xSignature(merchant.webhook_secret, body);
  const order = await call(stack.api.url, { path: '/v1/orders', headers, body });
  t.equal(order.status, 201, order.text);

  const importing = running(stack, merchant, { file: csv(rows), prefix: 'big' });
  await eventually(async () => ((await importWriting(stack)) ? true : undefined), 'the import to be writing its rows', 30_000);
  const paid = await simulatePay(stack.sim.url, { reference: order.json.data.ref_code });
  t.equal(paid.status, 200);
  await eventually(async () => {
    const res = await call(stack.api.url, { path: `/v1/orders/${order.json.data.ref_code}`, headers: { 'x-api-key': merchant.api_key } });
    return res.json?.data?.status === 'PAID' ? true : undefined;
  }, 'the order to be PAID', 30_000);
  t.same(
    { answered: importing.state.answered, committed: await committedImportRows(stack, merchant), open: await importWriting(stack) },
    { answered: false, committed: 0, open: true },
    'the credit committed while the import had committed nothing, its transaction still open and its answer not sent',
  );

  const res = await importing.answer;
  t.equal(res.status, 200, res.text.slice(0, 500));
  t.match(res.json.data, { rows: 30_000, accepted: 30_000, refused: 0, total_debit: total });
  const credit = 50_000 - mdrOf(50_000, 70);
  t.equal(await balanceOf(stack, merchant), credit, 'the whole file was debited, after the credit');
  t.same((await movements(stack, merchant)).map((m) => [m.type, m.amount]), [
    ['ADJUSTMENT', total], ['ORDER_PAYMENT', credit], ['DISBURSEMENT_IMPORT', -total],
  ], 'the wallet took the credit before the import\'s debit');
  await ledgerAudit(t, stack.env);
});

t.test('a single disbursement during an import is answered while it runs, and the import decides on the balance it left', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  const n = 20_000;
  await fundWallet(stack.api.ctx.pool, merchant, n * 12_500);
  const importing = running(stack, merchant, { file: csv(payroll(n, () => 10_000)), prefix: 'payroll' });
  await eventually(async () => ((await importWriting(stack)) ? true : undefined), 'the import to be writing its rows', 30_000);
  // 97,500 + 2,500: the room of 8 rows of the file.
  const single = await call(stack.api.url, { path: '/v1/disbursements', headers: { 'x-api-key': merchant.api_key }, body: { idempotency_key: 'single', ...bank(97_500) } });
  t.same(
    { status: single.status, answered: importing.state.answered, committed: await committedImportRows(stack, merchant) },
    { status: 201, answered: false, committed: 0 },
    'the single create went through while the import was writing its rows',
  );

  const res = await importing.answer;
  t.equal(res.status, 200, res.text.slice(0, 500));
  const { data } = res.json;
  t.match(data, { rows: n, accepted: n - 8, refused: 8, queued: n - 8, total_debit: (n - 8) * 12_500 });
  t.match(data.results[n - 8], { status: 'REFUSED', error: { code: 'INSUFFICIENT_BALANCE', message: /balance left after the rows above \(0\) is below this row's amount plus fee \(12500\)/ } });
  t.match(data.results[n - 1], { status: 'REFUSED', error: { code: 'INSUFFICIENT_BALANCE', message: new RegExp(`row ${n - 7} was the first the balance could not cover`) } });
  t.equal(data.results[n - 9].status, 'ACCEPTED');
  t.equal(await balanceOf(stack, merchant), 0, 'exactly the balance the single create left');
  t.match(await written(stack, merchant.merchant_id), { disbursements: n - 8 + 1, imports: 1, debits: 1, importDebits: 1, debited: n * 12_500, jobs: n - 8 + 1 },
    'rows written for the forecast and then refused are gone with their jobs');
  const record = await call(stack.api.url, { path: `/v1/disbursements/imports/${data.import_id}`, headers: { 'x-api-key': merchant.api_key } });
  t.same(record.json.data.refused_rows.map((r: any) => [r.row, r.error.code, r.error.message]),
    data.results.slice(n - 8).map((r: any) => [r.row, r.error.code, r.error.message]), 'the record keeps the refusals the answer gave');
  t.match(record.json.data, { accepted: n - 8, refused: 8, total_debit: (n - 8) * 12_500 });
  await ledgerAudit(t, stack.env);
});

t.test('the audit proves each imported disbursement is covered by its import\'s one debit, and completed or reversed on its own', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  const pool = stack.api.ctx.pool;
  await fundWallet(stack.api.ctx.pool, merchant, 100_000);
  const res = await upload(stack, merchant, { file: csv([bank(10_000), bank(20_000)]), prefix: 'audited' });
  t.match(res.json.data, { accepted: 2, total_debit: 35_000 });
  const [first] = res.json.data.results;
  const problems = async () => JSON.parse((await ops(stack.env, 'ledger:audit', '--json')).stdout).problems;

  await pool.query(sql.unsafe`update disbursement_imports set total_debit = total_debit + 1 where id = ${res.json.data.import_id}`);
  t.same(await problems(), [{ check: 'import_debit', subject: res.json.data.import_id, detail: 'transfer 35000, disbursements 35000, import record 35001' }]);
  await pool.query(sql.unsafe`update disbursement_imports set total_debit = total_debit - 1 where id = ${res.json.data.import_id}`);

  // Marked SUCCESS with no completion transfer: its money would still be in flight.
  await pool.query(sql.unsafe`update disbursements set status = 'SUCCESS' where id = ${first.disbursement_id}`);
  t.same(await problems(), [
    { check: 'disbursement_transfers', subject: first.ref_code, detail: 'SUCCESS: debited 1, completed 0, reversed 0, returned 0' },
    { check: 'disbursements_in_flight', subject: merchant.merchant_id, detail: 'account 35000, unfinished disbursements 22500' },
  ]);
  await pool.query(sql.unsafe`update disbursements set status = 'PENDING' where id = ${first.disbursement_id}`);

  // An imported disbursement reversed on its own (REJECTED from review) keeps the audit clean.
  await pool.query(sql.unsafe`update disbursements set status = 'IN_REVIEW' where id = ${first.disbursement_id}`);
  const rejected = await ops(stack.env, 'disbursements:reject', '--id', first.disbursement_id, '--reason', 'audit test');
  t.equal(rejected.code, 0, rejected.stderr);
  t.equal(await balanceOf(stack, merchant), 100_000 - 22_500);
  await ledgerAudit(t, stack.env);
});
