// The legacy disbursement API (spec 2.9, 3.2, 4.10, 5.4, 7, 8) through the real HTTP server,
// Postgres, a disbursement worker process, the simulator gateway and a webhook receiver: RSA
// X-SIGNATURE with keys generated here and stored by the ops CLI, the {code, message, data}
// envelope (HTTP status = code), decimal-string amounts, WIB times, every disbursement message,
// and one wallet, ledger and key space shared with V1. Every test ends with the ledger audit.
import t from 'tap';
import { createHash, generateKeyPairSync, randomBytes, randomUUID, sign, type KeyObject } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adjustWallet } from '../../db/ledger.ts';
import { setLegacyPublicKey, type ProvisionedMerchant } from '../../db/merchants.ts';
import { sql } from '../../db/pool.ts';
import { makeMerchant, type MerchantOptions } from '../helpers/factories.ts';
import { call, eventually, type TestResponse } from '../helpers/http.ts';
import { balanceOf, ledgerAudit } from '../helpers/money.ts';
import { ops } from '../helpers/processes.ts';
import { startCallbackReceiver } from '../helpers/simulator.ts';
import { startStack } from '../helpers/stack.ts';

const stack = await startStack(t, { groups: ['disbursement', 'webhook'] });
const ctx = stack.api.ctx;
const keyDir = await mkdtemp(join(tmpdir(), 'kasir-legacy-keys-'));
t.teardown(() => rm(keyDir, { recursive: true, force: true }));

type Test = Pick<typeof t, 'equal' | 'same'>;

const BANK_CREATE_FIELDS = [
  'refCode', 'orderId', 'accountNumber', 'accountName', 'bank', 'requestAmount', 'disbursementFee', 'disbursementAmount', 'status', 'requestAt',
];
const BANK_QUERY_FIELDS = [...BANK_CREATE_FIELDS, 'method'];
const EWALLET_FIELDS = ['refCode', 'orderId', 'method', 'ewallet', 'requestAmount', 'disbursementFee', 'disbursementAmount', 'status', 'requestAt'];
const WIB_FORMAT = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;

/** WIB (Asia/Jakarta, UTC+7, no DST) wall time of an ISO instant, computed independently. */
const jakarta = new Intl.DateTimeFormat('sv-SE', {
  timeZone: 'Asia/Jakarta', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23',
});
const wibOf = (iso: string) => jakarta.format(new Date(iso));

interface LegacyMerchant extends ProvisionedMerchant {
  privateKey: KeyObject;
}

/** A merchant whose RSA public key an operator stored with `merchant:set-public-key`. */
async function legacyMerchant(options: MerchantOptions = {}): Promise<LegacyMerchant> {
  const merchant = await makeMerchant(ctx, options);
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const file = join(keyDir, `${merchant.merchant_id}.pub.pem`);
  await writeFile(file, publicKey.export({ type: 'spki', format: 'pem' }));
  const stored = await ops(stack.env, 'merchant:set-public-key', '--merchant', merchant.merchant_id, '--file', file, '--json');
  if (stored.code !== 0) throw new Error(`merchant:set-public-key: ${stored.stderr}`);
  return { ...merchant, privateKey };
}

/** base64 RSA-SHA256 (PKCS#1 v1.5) over clientId|clientSecret|sha256hex(raw body), as a merchant signs. */
function xSignature(m: ProvisionedMerchant, raw: Buffer, key: KeyObject, secret = m.legacy_client_secret): string {
  const bodyHash = createHash('sha256').update(raw).digest('hex');
  return sign('sha256', Buffer.from(`${m.legacy_client_id}|${secret}|${bodyHash}`), key).toString('base64');
}

interface Send {
  /** The exact bytes to send (default: JSON of clientId + body). */
  raw?: Buffer;
  /** The header to send; null sends none (default: a correct signature). */
  signature?: string | null;
}

function legacy(m: LegacyMerchant | ProvisionedMerchant, endpoint: string, body: Record<string, unknown>, send: Send = {}): Promise<TestResponse> {
  const raw = send.raw ?? Buffer.from(JSON.stringify({ clientId: m.legacy_client_id, ...body }));
  const signature = send.signature !== undefined ? send.signature : xSignature(m, raw, (m as LegacyMerchant).privateKey);
  const headers: Record<string, string> = signature === null ? {} : { 'X-SIGNATURE': signature };
  return call(stack.api.url, { path: `/api/disbursement/${endpoint}`, headers, body: raw });
}

function legacyError(t: Test, res: TestResponse, code: number, message: string, what = message) {
  t.equal(res.status, code, `${what}: HTTP ${code}`);
  t.same(res.json, { code, message, data: null }, `${what}: envelope`);
}

function ok(t: Test, res: TestResponse, what: string) {
  t.equal(res.status, 200, `${what}: HTTP 200 ${res.status === 200 ? '' : res.text}`);
  t.equal(res.json?.code, 200, `${what}: code 200`);
  t.equal(res.json?.message, 'Success', `${what}: Success`);
  return res.json?.data;
}

async function fund(m: ProvisionedMerchant, amount: number) {
  await ctx.pool.transaction((tx) => adjustWallet(tx, { merchantId: m.merchant_id, adjustmentId: randomUUID(), amount, reason: 'test float' }));
}

const newOrderId = (prefix = 'PO') => `${prefix}-${randomBytes(5).toString('hex').toUpperCase()}`;

const bankBody = (requestAmount: unknown, extra: Record<string, unknown> = {}) => ({
  orderId: newOrderId(), bankCode: 'BCA', accountNumber: '1234567890', accountName: 'Budi Santoso', requestAmount, ...extra,
});

const ewalletBody = (requestAmount: unknown, extra: Record<string, unknown> = {}) => ({
  orderId: newOrderId(), ewalletCode: 'OVO', accountNumber: '081234567890', requestAmount, ...extra,
});

async function legacyBalance(t: Test, m: LegacyMerchant): Promise<string> {
  return ok(t, await legacy(m, 'get-balance', {}), 'get-balance').balance;
}

function queried(m: LegacyMerchant, orderId: string, status: string) {
  return eventually(async () => {
    const res = await legacy(m, 'query', { orderId });
    return res.json?.data?.status === status ? res.json.data : undefined;
  }, `disbursement ${orderId} to become ${status}`);
}

function v1(m: ProvisionedMerchant, path: string, body?: unknown) {
  return call(stack.api.url, { path, headers: { 'x-api-key': m.api_key }, body });
}

async function rows(m: ProvisionedMerchant) {
  return ctx.pool.oneFirst(sql.unsafe`select count(*)::int from disbursements where merchant_id = ${m.merchant_id}`);
}

t.test('a weak RSA key: refused by merchant:set-public-key, and never verifies if stored anyway', async (t) => {
  const m = await makeMerchant(ctx);
  await fund(m, 10_000);
  for (const bits of [512, 1024, 2047]) {
    const weak = generateKeyPairSync('rsa', { modulusLength: bits });
    const file = join(keyDir, `${m.merchant_id}.${bits}.pub.pem`);
    await writeFile(file, weak.publicKey.export({ type: 'spki', format: 'pem' }));
    const refused = await ops(stack.env, 'merchant:set-public-key', '--merchant', m.merchant_id, '--file', file);
    t.equal(refused.code, 1, `a ${bits}-bit key is refused`);
    t.match(refused.stderr, new RegExp(`${bits}-bit RSA key; an RSA key of at least 2048 bits is required`), 'the error names the size and the rule');
    const raw = Buffer.from(JSON.stringify({ clientId: m.legacy_client_id }));
    legacyError(t, await legacy(m, 'get-balance', {}, { signature: xSignature(m, raw, weak.privateKey) }), 401, 'Public Key is not set', `${bits}-bit: nothing was stored`);

    // A key stored before the rule (or by hand): a request signed with it is refused too.
    await setLegacyPublicKey(ctx.pool, m.merchant_id, weak.publicKey.export({ type: 'spki', format: 'pem' }).toString());
    legacyError(t, await legacy(m, 'get-balance', {}, { signature: xSignature(m, raw, weak.privateKey) }), 401, 'Invalid X-SIGNATURE', `a stored ${bits}-bit key verifies nothing`);
    await ctx.pool.query(sql.unsafe`update merchants set legacy_public_key = null where id = ${m.merchant_id}`);
  }
  const strong = await legacyMerchant();
  await fund(strong, 10_000);
  ok(t, await legacy(strong, 'get-balance', {}), 'a 2048-bit key stored through the CLI verifies');
});

t.test('X-SIGNATURE: good, bad and missing; no public key; unknown or inactive client', async (t) => {
  const m = await legacyMerchant();
  await fund(m, 50_000);
  const data = ok(t, await legacy(m, 'get-balance', {}), 'a good signature');
  t.same(data, { clientId: m.legacy_client_id, balance: '50000.00' }, 'balance as a decimal string');

  const raw = Buffer.from(JSON.stringify({ clientId: m.legacy_client_id }));
  for (const endpoint of ['get-balance', 'create', 'create-ewallet', 'query']) {
    legacyError(t, await legacy(m, endpoint, {}, { signature: null }), 401, 'Invalid X-SIGNATURE', `${endpoint} without X-SIGNATURE`);
  }
  const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
  legacyError(t, await legacy(m, 'get-balance', {}, { signature: xSignature(m, raw, other) }), 401, 'Invalid X-SIGNATURE', 'signed with another key');
  legacyError(t, await legacy(m, 'get-balance', {}, { signature: xSignature(m, raw, m.privateKey, 'not-the-secret') }), 401, 'Invalid X-SIGNATURE', 'signed with another client secret');
  const tampered = Buffer.from(JSON.stringify({ clientId: m.legacy_client_id, orderId: 'x' }));
  legacyError(t, await legacy(m, 'get-balance', {}, { raw: tampered, signature: xSignature(m, raw, m.privateKey) }), 401, 'Invalid X-SIGNATURE', 'a body other than the one signed');
  legacyError(t, await legacy(m, 'get-balance', {}, { signature: 'bm90IGEgc2lnbmF0dXJl' }), 401, 'Invalid X-SIGNATURE', 'not a signature');
  legacyError(t, await legacy(m, 'get-balance', {}, { signature: '' }), 401, 'Invalid X-SIGNATURE', 'an empty header');

  // The exact bytes are signed: any JSON layout verifies when its own bytes were signed.
  const pretty = Buffer.from(`{\n  "clientId" : "${m.legacy_client_id}",\n  "extra": [1, 2]\n}\n`);
  t.equal(ok(t, await legacy(m, 'get-balance', {}, { raw: pretty }), 'pretty-printed body').balance, '50000.00');

  const keyless = await makeMerchant(ctx);
  legacyError(t, await legacy(keyless, 'get-balance', {}, { signature: xSignature(keyless, raw, m.privateKey) }), 401, 'Public Key is not set');
  legacyError(t, await legacy(keyless, 'create', bankBody(1_000), { signature: null }), 401, 'Public Key is not set', 'no key, no header');

  legacyError(t, await legacy({ ...m, legacy_client_id: 'KSR-NOBODY' }, 'get-balance', {}), 401, 'Invalid Client ID', 'unknown clientId');
  const suspended = await legacyMerchant();
  t.equal((await ops(stack.env, 'merchant:set-status', '--merchant', suspended.merchant_id, '--status', 'SUSPENDED')).code, 0);
  legacyError(t, await legacy(suspended, 'get-balance', {}), 401, 'Invalid Client ID', 'suspended merchant');

  legacyError(t, await legacy(m, 'get-balance', {}, { raw: Buffer.from('{}') }), 400, 'Invalid request parameters', 'no clientId');
  legacyError(t, await legacy(m, 'get-balance', {}, { raw: Buffer.from('{"clientId":') }), 400, 'Invalid request parameters', 'malformed JSON');
  legacyError(t, await legacy(m, 'get-balance', {}, { raw: Buffer.from('[1]') }), 400, 'Invalid request parameters', 'not an object');

  const manual = await legacyMerchant({ settlement: 'MANUAL' });
  for (const endpoint of ['get-balance', 'create', 'query']) {
    legacyError(t, await legacy(manual, endpoint, bankBody(1_000)), 400, 'Disbursement is not available: merchant settlement type is not WALLET', `MANUAL merchant: ${endpoint}`);
  }
  t.equal(await rows(m), 0, 'nothing was created');
  t.equal(await balanceOf(stack, m), 50_000, 'nothing was debited');
  await ledgerAudit(t, stack.env);
});

t.test('a bank disbursement: decimal strings, WIB time, PENDING then SUCCESS, legacy webhooks', async (t) => {
  const receiver = await startCallbackReceiver();
  t.teardown(() => receiver.close());
  const m = await legacyMerchant();
  await fund(m, 200_000);
  t.equal(await legacyBalance(t, m), '200000.00');

  const body = bankBody(150_000, { notifyUrl: receiver.url });
  const created = ok(t, await legacy(m, 'create', body), 'bank create');
  t.same(Object.keys(created).sort(), [...BANK_CREATE_FIELDS].sort(), 'spec 4.10 fields: no method on a bank create');
  t.match(created, {
    refCode: /^DSB-\d+-[0-9A-Z]+$/, orderId: body.orderId, accountNumber: '1234567890', accountName: 'Budi Santoso',
    bank: { name: 'Bank Central Asia', code: 'BCA' }, requestAmount: '150000.00', disbursementFee: '2500.00',
    disbursementAmount: '150000.00', status: 'PENDING',
  });
  t.match(created.requestAt, WIB_FORMAT);
  t.equal(await legacyBalance(t, m), '47500.00', 'requestAmount + fee held at creation');
  t.equal(await balanceOf(stack, m), 47_500, 'the same balance through V1');

  const v1Read = await v1(m, `/v1/disbursements/${created.refCode}`);
  t.equal(created.requestAt, wibOf(v1Read.json.data.requested_at), 'requestAt is requested_at in WIB');
  t.match(v1Read.json.data, { idempotency_key: body.orderId, source: 'API', channel: 'BANK', request_amount: 150_000, fee: 2_500, total_debit: 152_500 });

  const done = await queried(m, body.orderId, 'SUCCESS');
  t.same(Object.keys(done).sort(), [...BANK_QUERY_FIELDS].sort(), 'spec 2.9 query fields');
  t.same(done, { ...created, method: 'BANK_ACCOUNT', status: 'SUCCESS' }, 'the query shows what the create did, now SUCCESS');
  t.equal(await legacyBalance(t, m), '47500.00', 'success moves no more money from the wallet');

  const hooks = await receiver.waitFor(2);
  t.same(hooks.map((h) => h.json.status), ['ON_PROCESS', 'SUCCESS'], 'a webhook per status change');
  for (const hook of hooks) {
    t.same(Object.keys(hook.json).sort(), [...BANK_QUERY_FIELDS].sort(), `webhook ${hook.json.status}: the legacy query shape, no event`);
    t.equal(hook.json.orderId, body.orderId);
    t.equal(hook.json.requestAmount, '150000.00');
  }
  t.same(hooks[1].json, done, 'the SUCCESS webhook is the query answer');
  await ledgerAudit(t, stack.env);
});

t.test('an e-wallet disbursement: 08… in, 62… stored, 08… shown; DANA from 20,000', async (t) => {
  const m = await legacyMerchant();
  await fund(m, 100_000);
  const body = ewalletBody(20_000);
  const created = ok(t, await legacy(m, 'create-ewallet', body), 'e-wallet create');
  t.same(Object.keys(created).sort(), [...EWALLET_FIELDS].sort(), 'spec 4.10 e-wallet fields');
  t.match(created, {
    refCode: /^DSB-\d+-[0-9A-Z]+$/, orderId: body.orderId, method: 'EWALLET', ewallet: { code: 'OVO', accountNumber: '081234567890' },
    requestAmount: '20000.00', disbursementFee: '1000.00', disbursementAmount: '20000.00', status: 'PENDING',
  });
  t.match(created.requestAt, WIB_FORMAT);
  const v1Read = await v1(m, `/v1/disbursements/${created.refCode}`);
  t.match(v1Read.json.data, { channel: 'EWALLET', ewallet_provider: 'OVO', ewallet_phone: '6281234567890', account_number: null, total_debit: 21_000 });

  const done = await queried(m, body.orderId, 'SUCCESS');
  t.same(done, { ...created, status: 'SUCCESS' }, 'query: the same shape, now SUCCESS');

  const dana = ok(t, await legacy(m, 'create-ewallet', ewalletBody(20_000, { ewalletCode: 'dana', accountNumber: '085712345678' })), 'DANA at exactly 20,000');
  t.same(dana.ewallet, { code: 'DANA', accountNumber: '085712345678' }, 'the code in upper case');
  t.equal(await legacyBalance(t, m), '58000.00');
  await queried(m, dana.orderId, 'SUCCESS');
  await ledgerAudit(t, stack.env);
});

t.test('accounts ending 0000 fail at the gateway: FAILED, and the money comes back once', async (t) => {
  const m = await legacyMerchant();
  await fund(m, 100_000);
  const bank = ok(t, await legacy(m, 'create', bankBody(50_000, { accountNumber: '1234560000' })), 'bank create');
  const wallet = ok(t, await legacy(m, 'create-ewallet', ewalletBody(10_000, { accountNumber: '081234560000' })), 'e-wallet create');
  const history = await v1(m, '/v1/balance-history?limit=100');
  const debits = history.json.data.filter((mv: any) => mv.type === 'DISBURSEMENT').map((mv: any) => mv.amount).sort((a: number, b: number) => a - b);
  t.same(debits, [-52_500, -11_000], 'both debited at creation');
  t.equal((await queried(m, bank.orderId, 'FAILED')).method, 'BANK_ACCOUNT');
  t.equal((await queried(m, wallet.orderId, 'FAILED')).method, 'EWALLET');
  t.equal(await legacyBalance(t, m), '100000.00', 'both debits returned');
  const reversals = await ctx.pool.oneFirst(sql.unsafe`
    select count(*)::int from ledger_transfers t join disbursements d on d.id = t.reference_id
    where d.merchant_id = ${m.merchant_id} and t.kind = 'DISBURSEMENT_REVERSAL'`);
  t.equal(reversals, 2, 'one reversal each');
  await ledgerAudit(t, stack.env);
});

// Issue 37: the name rule holds for legacy creates too (they have no accept_name_mismatch).
t.test('a legacy payout whose holder the bank names otherwise is FAILED ACCOUNT_NAME_MISMATCH; the money comes back once', async (t) => {
  const m = await legacyMerchant();
  await fund(m, 100_000);
  const bank = ok(t, await legacy(m, 'create', bankBody(50_000, { accountNumber: '1234568888', accountName: 'Budi Santoso' })), 'bank create');
  await queried(m, bank.orderId, 'FAILED');
  const reason = await ctx.pool.oneFirst(sql.unsafe`select failure_reason from disbursements where ref_code = ${bank.refCode}`);
  t.equal(reason, 'ACCOUNT_NAME_MISMATCH');
  t.equal(await legacyBalance(t, m), '100000.00', 'the debit returned');
  const madeUp = ok(t, await legacy(m, 'create', bankBody(20_000, { accountNumber: '3141592653', accountName: 'Rizky Pratama' })), 'a made-up name');
  await queried(m, madeUp.orderId, 'SUCCESS');
  await ledgerAudit(t, stack.env);
});

t.test('every legacy disbursement message, each refusal writing nothing', async (t) => {
  const m = await legacyMerchant();
  await fund(m, 10_000);
  const invalid = 'Invalid request parameters';
  const { orderId: _o, ...noOrderId } = bankBody(1_000);
  const bankCases: Array<[string, Record<string, unknown>]> = [
    ['no orderId', noOrderId],
    ['no bankCode', bankBody(1_000, { bankCode: undefined })],
    ['no accountNumber', bankBody(1_000, { accountNumber: undefined })],
    ['no accountName', bankBody(1_000, { accountName: undefined })],
    ['blank accountName', bankBody(1_000, { accountName: '  ' })],
    ['no requestAmount', bankBody(undefined)],
    ['requestAmount 0', bankBody(0)],
    ['requestAmount -1', bankBody(-1)],
    ['requestAmount 1.5', bankBody(1.5)],
    ['requestAmount "1000"', bankBody('1000')],
    ['requestAmount null', bankBody(null)],
    ['accountNumber not digits', bankBody(1_000, { accountNumber: '12-34-5678' })],
    ['orderId a number', bankBody(1_000, { orderId: 12345 })],
    ['notifyUrl to a private address', bankBody(1_000, { notifyUrl: 'http://10.1.2.3/hook' })],
    ['notifyUrl not a URL', bankBody(1_000, { notifyUrl: 'nope' })],
  ];
  for (const [what, body] of bankCases) legacyError(t, await legacy(m, 'create', body), 400, invalid, `create: ${what}`);
  const ewalletCases: Array<[string, Record<string, unknown>]> = [
    ['no ewalletCode', ewalletBody(1_000, { ewalletCode: undefined })],
    ['no accountNumber', ewalletBody(1_000, { accountNumber: undefined })],
    ['accountNumber 62…', ewalletBody(1_000, { accountNumber: '6281234567890' })],
    ['accountNumber 8…', ewalletBody(1_000, { accountNumber: '81234567890' })],
    ['accountNumber +62…', ewalletBody(1_000, { accountNumber: '+6281234567890' })],
    ['accountNumber with dashes', ewalletBody(1_000, { accountNumber: '0812-3456-7890' })],
    ['accountNumber too short', ewalletBody(1_000, { accountNumber: '0812345' })],
    ['requestAmount 0', ewalletBody(0)],
  ];
  for (const [what, body] of ewalletCases) legacyError(t, await legacy(m, 'create-ewallet', body), 400, invalid, `create-ewallet: ${what}`);
  legacyError(t, await legacy(m, 'query', {}), 400, invalid, 'query without orderId');

  legacyError(t, await legacy(m, 'create', bankBody(1_000, { bankCode: 'NOPE' })), 400, 'Bank Cannot be used for Disbursement', 'unknown bankCode');
  t.equal((await ops(stack.env, 'banks:disable', '--code', 'PANIN')).code, 0);
  legacyError(t, await legacy(m, 'create', bankBody(1_000, { bankCode: 'PANIN' })), 400, 'Bank Cannot be used for Disbursement', 'disabled bank');

  legacyError(t, await legacy(m, 'create-ewallet', ewalletBody(1_000, { ewalletCode: 'PAYPAL' })), 400, 'Invalid ewalletCode.', 'unknown ewalletCode');
  t.equal((await ops(stack.env, 'ewallets:disable', '--code', 'KASPRO')).code, 0);
  await eventually(async () => {
    const res = await legacy(m, 'create-ewallet', ewalletBody(1_000, { ewalletCode: 'KASPRO' }));
    return res.json?.message === 'Invalid ewalletCode.' ? true : undefined;
  }, 'a disabled e-wallet to be refused');

  legacyError(t, await legacy(m, 'create-ewallet', ewalletBody(19_999, { ewalletCode: 'DANA' })), 400, 'Minimum requestAmount for DANA is 20000.');
  legacyError(t, await legacy(m, 'create-ewallet', ewalletBody(20_000, { ewalletCode: 'DANA' })), 400, 'Insufficient Balance', 'DANA at 20,000 passes the minimum');
  legacyError(t, await legacy(m, 'create', bankBody(7_501)), 400, 'Insufficient Balance', 'requestAmount + fee above the balance');
  legacyError(t, await legacy(m, 'create', bankBody(100_000_001)), 400, 'Maximum Request Amount Exceeded');
  legacyError(t, await legacy(m, 'query', { orderId: 'NOPE-1' }), 404, 'Disbursement with orderId NOPE-1 not found.');
  t.equal(await rows(m), 0, 'no refusal wrote a disbursement');
  t.equal(await legacyBalance(t, m), '10000.00', 'no refusal debited');

  ok(t, await legacy(m, 'create', bankBody(1_000, { orderId: 'DUP-1' })), 'first use of DUP-1');
  legacyError(t, await legacy(m, 'create', bankBody(1_000, { orderId: 'DUP-1' })), 400, 'Disbursement with orderId DUP-1 Already Exists.');
  legacyError(t, await legacy(m, 'create-ewallet', ewalletBody(1_000, { orderId: 'DUP-1' })), 400, 'Disbursement with orderId DUP-1 Already Exists.', 'the same orderId on an e-wallet');
  legacyError(t, await legacy(m, 'create', bankBody(9_999_999, { orderId: 'DUP-1', bankCode: 'NOPE' })), 400, 'Disbursement with orderId DUP-1 Already Exists.', 'the orderId is checked before bank and balance');

  t.equal((await ops(stack.env, 'merchant:set-fees', '--merchant', m.merchant_id, '--daily-limit', '2000')).code, 0);
  legacyError(t, await legacy(m, 'create', bankBody(1_001)), 400, 'Daily Disbursement Limit Exceeded', 'over the daily limit');
  ok(t, await legacy(m, 'create', bankBody(1_000)), 'exactly the daily limit');

  const other = await legacyMerchant();
  legacyError(t, await legacy(other, 'query', { orderId: 'DUP-1' }), 404, 'Disbursement with orderId DUP-1 not found.', "another merchant's orderId");
  t.equal(await rows(m), 2);
  t.equal(await legacyBalance(t, m), '3000.00', 'two disbursements of 1,000 + 2,500 fee');
  await ledgerAudit(t, stack.env);
});

t.test('above the review threshold a legacy disbursement is IN_REVIEW until an operator decides', async (t) => {
  const m = await legacyMerchant();
  await fund(m, 100_000);
  t.equal((await ops(stack.env, 'merchant:set-fees', '--merchant', m.merchant_id, '--review-threshold', '40000')).code, 0);
  const created = ok(t, await legacy(m, 'create', bankBody(50_000)), 'create');
  t.equal(created.status, 'IN_REVIEW');
  const { json } = await v1(m, `/v1/disbursements/${created.refCode}`);
  t.equal((await ops(stack.env, 'disbursements:reject', '--id', json.data.id, '--reason', 'test')).code, 0);
  t.equal((await queried(m, created.orderId, 'REJECTED')).method, 'BANK_ACCOUNT');
  t.equal(await legacyBalance(t, m), '100000.00', 'the debit returned');
  await ledgerAudit(t, stack.env);
});

t.test('legacy and V1 share one wallet, one ledger and one key space', async (t) => {
  const m = await legacyMerchant();
  await fund(m, 100_000);
  const v1Body = { idempotency_key: 'SHARED-1', channel: 'BANK', bank_short_code: 'BCA', account_number: '1234567890', account_name: 'Budi Santoso', amount: 10_000 };
  t.equal((await v1(m, '/v1/disbursements', v1Body)).status, 201);
  legacyError(t, await legacy(m, 'create', bankBody(1_000, { orderId: 'SHARED-1' })), 400, 'Disbursement with orderId SHARED-1 Already Exists.', 'a V1 key as a legacy orderId');
  legacyError(t, await legacy(m, 'create-ewallet', ewalletBody(1_000, { orderId: 'SHARED-1' })), 400, 'Disbursement with orderId SHARED-1 Already Exists.', 'also on an e-wallet');

  const created = ok(t, await legacy(m, 'create', bankBody(20_000, { orderId: 'LEG-1' })), 'legacy create');
  const again = await v1(m, '/v1/disbursements', { ...v1Body, idempotency_key: 'LEG-1' });
  t.equal(again.status, 409);
  t.equal(again.json.error.code, 'DUPLICATE_IDEMPOTENCY_KEY', 'a legacy orderId as a V1 key');

  t.equal(await balanceOf(stack, m), 100_000 - 12_500 - 22_500, 'V1 balance');
  t.equal(await legacyBalance(t, m), '65000.00', 'the same balance through legacy');
  const list = await v1(m, '/v1/disbursements');
  t.same(list.json.data.map((d: any) => d.idempotency_key).sort(), ['LEG-1', 'SHARED-1'], 'V1 lists both');
  t.match(list.json.data.find((d: any) => d.idempotency_key === 'LEG-1'), { ref_code: created.refCode, source: 'API', request_amount: 20_000, fee: 2_500, total_debit: 22_500 });
  const history = await v1(m, '/v1/balance-history');
  t.ok(history.json.data.some((mv: any) => mv.ref_code === created.refCode && mv.amount === -22_500), 'the legacy debit is a V1 balance movement');

  const fromV1 = ok(t, await legacy(m, 'query', { orderId: 'SHARED-1' }), 'legacy query of a V1 disbursement');
  t.match(fromV1, { orderId: 'SHARED-1', method: 'BANK_ACCOUNT', requestAmount: '10000.00', disbursementFee: '2500.00' });
  await queried(m, 'SHARED-1', 'SUCCESS');
  await queried(m, 'LEG-1', 'SUCCESS');
  t.equal(await balanceOf(stack, m), 65_000);
  await ledgerAudit(t, stack.env);
});
