// Past CSV imports (GET /v1/disbursements/imports and /imports/{id}) through real HTTP: every
// import is on record with who uploaded it, when, its counts and total, and its refused rows'
// reasons exactly as the import's own answer gave them; the list follows the spec's pagination.
import t from 'tap';
import { randomBytes, randomUUID } from 'node:crypto';
import { call } from '../helpers/http.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { fundWallet, ledgerAudit } from '../helpers/money.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { issueKey, makeUser } from '../helpers/team.ts';

type M = Awaited<ReturnType<typeof makeMerchant>>;

const HEADER = 'channel,bank_short_code,account_number,account_name,ewallet_provider,ewallet_phone,amount,notify_url';
const FIELDS = [
  'id', 'idempotency_prefix', 'file_name', 'file_sha256', 'file_bytes', 'uploaded_by', 'rows', 'accepted', 'already_imported',
  'refused', 'skipped', 'total_debit', 'created_at',
];
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

async function upload(stack: Stack, apiKey: string, lines: string[], prefix: string, filename = 'payouts.csv') {
  const form = new FormData();
  form.set('file', new Blob([[HEADER, ...lines].join('\n') + '\n'], { type: 'text/csv' }), filename);
  form.set('idempotency_prefix', prefix);
  const res = await fetch(`${stack.api.url}/v1/disbursements/import`, { method: 'POST', headers: { 'x-api-key': apiKey }, body: form });
  const json = (await res.json()) as any;
  if (res.status !== 200) throw new Error(`import: ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

const get = (stack: Stack, apiKey: string, path: string) => call(stack.api.url, { path, headers: { 'x-api-key': apiKey } });

/** The record the import's own answer describes. */
const asRecorded = (result: Record<string, unknown>) => ({
  id: result.import_id, idempotency_prefix: result.idempotency_prefix, rows: result.rows, accepted: result.accepted,
  already_imported: result.already_imported, refused: result.refused, skipped: result.skipped, total_debit: result.total_debit,
});

/** The refused rows as the import's answer listed them. */
const refusedIn = (result: { results: { status: string; row: number; idempotency_key: string; error?: unknown }[] }) =>
  result.results.filter((r) => r.status === 'REFUSED').map((r) => ({ row: r.row, idempotency_key: r.idempotency_key, error: r.error }));

t.test('imports are listed newest first, paginated, and each read with its uploader and refused rows', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  const key = merchant.api_key;
  await fundWallet(stack.api.ctx.pool, merchant, 100_000);

  const prefix = `pay-${randomBytes(3).toString('hex')}`;
  const first = await upload(stack, key, [
    'BANK,BCA,1234567890,Budi Santoso,,,10000,',
    ',,,,,,,',
    'BANK,NOPE,1234567890,Budi Santoso,,,10000,',
    'EWALLET,,,,OVO,081234567890,20000,',
    'BANK,BCA,1234567890,Budi Santoso,,,500000,',
  ], prefix, 'payroll-march.csv');
  t.match(first, { rows: 5, accepted: 2, refused: 2, skipped: 1 }, 'the import itself');

  const finance = await makeUser(stack, key, 'finance');
  const financeKey = (await issueKey(stack, finance.id)).api_key;
  const second = await upload(stack, financeKey, ['BANK,BRI,0099887766,Siti,,,5000,'], `fin-${randomBytes(3).toString('hex')}`);
  const retried = await upload(stack, key, [
    'BANK,BCA,1234567890,Budi Santoso,,,10000,',
  ], prefix, 'payroll-march.csv');
  t.equal(retried.already_imported, 1);

  const list = await get(stack, key, '/v1/disbursements/imports');
  t.equal(list.status, 200, list.text);
  t.same(Object.keys(list.json).sort(), ['data', 'meta', 'success']);
  t.same(list.json.meta, { page: 1, limit: 20, total: 3, total_pages: 1 }, 'spec 8: page 1, limit 20 by default');
  t.same(list.json.data.map((i: { id: string }) => i.id), [retried.import_id, second.import_id, first.import_id], 'newest first');
  const [r, s, f] = list.json.data;
  for (const item of list.json.data) t.same(Object.keys(item).sort(), [...FIELDS].sort(), 'exactly the record\'s fields');
  t.match(f, { ...asRecorded(first), file_name: 'payroll-march.csv', file_sha256: /^[0-9a-f]{64}$/, created_at: ISO });
  t.ok(f.file_bytes > 100, 'its size');
  t.same(f.uploaded_by, { user_id: null, full_name: null, role: 'owner' }, 'uploaded with the merchant\'s own key');
  t.match(s, asRecorded(second));
  t.same(s.uploaded_by, { user_id: finance.id, full_name: finance.full_name, role: 'finance' }, 'uploaded by a team user, with the role it acted with');
  t.match(r, { ...asRecorded(retried), already_imported: 1, accepted: 0, total_debit: 0 });
  t.ok(f.created_at < s.created_at && s.created_at < r.created_at, 'when');

  const paged = await get(stack, key, '/v1/disbursements/imports?page=2&limit=2');
  t.same(paged.json.meta, { page: 2, limit: 2, total: 3, total_pages: 2 });
  t.same(paged.json.data, [f], 'the second page holds the oldest');
  t.same((await get(stack, key, '/v1/disbursements/imports?page=3&limit=2')).json.data, [], 'past the end: empty');
  t.equal((await get(stack, key, '/v1/disbursements/imports?limit=100')).json.meta.limit, 100, 'limit up to 100');
  for (const query of ['limit=101', 'limit=0', 'page=0', 'page=abc', 'limit=1.5']) {
    const bad = await get(stack, key, `/v1/disbursements/imports?${query}`);
    t.equal(bad.status, 400, `${query}: 400`);
    t.equal(bad.json.error.code, 'INVALID_BODY', `${query}: INVALID_BODY`);
  }

  const one = await get(stack, key, `/v1/disbursements/imports/${first.import_id}`);
  t.equal(one.status, 200, one.text);
  const { refused_rows: refusedRows, ...record } = one.json.data;
  t.same(record, f, 'the record as listed');
  t.same(refusedRows, refusedIn(first), 'and its refused rows, with the reasons the import gave');
  t.match(refusedRows, [{ row: 3, error: { code: 'BANK_NOT_FOUND' } }, { row: 5, error: { code: 'INSUFFICIENT_BALANCE' } }]);
  t.same((await get(stack, key, `/v1/disbursements/imports/${second.import_id.toUpperCase()}`)).json.data.refused_rows, [], 'none refused: an empty list; the id in any case');

  // Every role reads; errors as the other wallet reads answer them.
  const viewerKey = (await issueKey(stack, (await makeUser(stack, key, 'viewer')).id)).api_key;
  t.equal((await get(stack, viewerKey, '/v1/disbursements/imports')).json.meta.total, 3, 'a viewer may list');
  t.equal((await get(stack, viewerKey, `/v1/disbursements/imports/${first.import_id}`)).status, 200, 'and read');
  const expect = async (apiKey: string, path: string, status: number, code: string, what: string) => {
    const res = await get(stack, apiKey, path);
    t.equal(res.status, status, `${what}: HTTP ${status}`);
    t.equal(res.json?.error?.code, code, `${what}: ${code}`);
  };
  await expect(key, '/v1/disbursements/imports/not-a-uuid', 400, 'INVALID_ID', 'not a UUID');
  await expect(key, `/v1/disbursements/imports/${randomUUID()}`, 404, 'NOT_FOUND', 'unknown');
  const other = await makeMerchant(stack.api.ctx);
  await expect(other.api_key, `/v1/disbursements/imports/${first.import_id}`, 404, 'NOT_FOUND', 'another merchant\'s');
  t.same((await get(stack, other.api_key, '/v1/disbursements/imports')).json, { success: true, data: [], meta: { page: 1, limit: 20, total: 0, total_pages: 0 } }, 'nor listed to them');
  const manual = await makeMerchant(stack.api.ctx, { settlement: 'MANUAL' });
  await expect(manual.api_key, '/v1/disbursements/imports', 403, 'NOT_WALLET_MERCHANT', 'a MANUAL merchant');
  t.equal((await call(stack.api.url, { path: '/v1/disbursements/imports' })).json?.error?.code, 'UNAUTHORIZED');
  t.equal((await get(stack, key, `/v1/disbursements/${first.results[0].disbursement_id}`)).status, 200, 'disbursements are still read by id');
  await ledgerAudit(t, stack.env);
});

t.test('thousands of refused rows are all kept, in file order', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  const lines = Array.from({ length: 2_100 }, (_, i) => (i % 700 === 0 ? ',,,,,,,' : `BANK,NOPE${i % 3},1234567890,Budi,,,10000,`));
  const result = await upload(stack, merchant.api_key, lines, 'many');
  t.equal(result.refused, 2_097);
  const one = await get(stack, merchant.api_key, `/v1/disbursements/imports/${result.import_id}`);
  t.equal(one.status, 200);
  t.equal(one.json.data.refused_rows.length, 2_097, 'every refused row');
  t.same(one.json.data.refused_rows, refusedIn(result), 'in file order, as the import answered');
});
