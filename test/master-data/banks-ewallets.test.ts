// Bank and e-wallet master data (spec 2.7, 4.7, 8): the seeded lists over real HTTP, only
// enabled entries, exact fields, Cache-Control, authentication; the one-hour in-process cache
// is real and is dropped across processes when the ops CLI (another process), plain SQL, or a
// listener reconnect says the tables changed; the ops commands themselves.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import t from 'tap';
import { findBankById, findBankByShortCode, findEwalletByShortCode } from '../../db/master-data.ts';
import { startApi } from '../helpers/api.ts';
import { testConfig, testEnv } from '../helpers/config.ts';
import { testDatabase } from '../helpers/db.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call, eventually } from '../helpers/http.ts';
import { ops as runOps } from '../helpers/processes.ts';

const BASE_URL = 'https://pay.kasir.test';
const databaseUrl = await testDatabase(t);
const env = testEnv(databaseUrl, { PUBLIC_BASE_URL: BASE_URL });
const api = await startApi(t, testConfig(databaseUrl, { PUBLIC_BASE_URL: BASE_URL }));
const merchant = await makeMerchant(api.ctx);
const ops = (...args: string[]) => runOps(env, ...args);
const get = (path: string, headers: Record<string, string> = { 'x-api-key': merchant.api_key }) => call(api.url, { path, headers });

/** Runs statements on a connection of the test's own, as an operator in psql would. */
async function sql(text: string, values: unknown[] = []) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query(text, values)).rows;
  } finally {
    await client.end();
  }
}

const codesOf = (res: { json: any }): string[] => res.json.data.map((x: { short_code: string }) => x.short_code);

/** Polls GET `path` until `accept` holds for its short codes; deadlines, not sleeps. */
function untilCodes(path: string, accept: (codes: string[]) => boolean, what: string, deadlineMs = 3_000) {
  return eventually(async () => {
    const res = await get(path);
    return res.status === 200 && accept(codesOf(res)) ? res : undefined;
  }, what, deadlineMs);
}

const SPEC_BANKS: Record<string, string> = {
  BCA: '014',
  MANDIRI: '008',
  BNI: '009',
  BRI: '002',
  CIMB: '022',
  PERMATA: '013',
  BTN: '200',
  DANAMON: '011',
  PANIN: '019',
  MAYBANK: '016',
};
const SPEC_EWALLETS = ['GOPAY', 'GOPAYDRIVER', 'OVO', 'SHOPEEPAY', 'LINKAJA', 'DANA', 'KASPRO'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

t.test('GET /v1/banks lists the seeded banks with their Bank Indonesia codes', async (t) => {
  const res = await get('/v1/banks');
  t.equal(res.status, 200);
  t.strictSame(Object.keys(res.json).sort(), ['data', 'success'], 'list without pagination: no meta');
  t.equal(res.json.success, true);
  t.equal(res.headers['cache-control'], 'private, max-age=3600', 'clients may keep it an hour, shared caches may not');

  const banks: any[] = res.json.data;
  t.ok(banks.length >= 40, `the common banks, not just the spec's ten (${banks.length})`);
  for (const bank of banks) {
    t.strictSame(Object.keys(bank).sort(), ['bi_code', 'id', 'is_enabled', 'name', 'short_code', 'sort_order'], bank.short_code);
    t.match(bank, { id: UUID, name: /\S/, short_code: /^[A-Z0-9_]+$/, bi_code: /^\d{3}$/, is_enabled: true });
    t.ok(Number.isInteger(bank.sort_order));
  }
  t.equal(new Set(codesOf(res)).size, banks.length, 'short codes are unique');
  t.ok(banks.every((b, i) => i === 0 || banks[i - 1].sort_order <= b.sort_order), 'ordered by sort_order');
  t.strictSame(codesOf(res).slice(0, 10), Object.keys(SPEC_BANKS), "the spec's ten come first, in its order");
  for (const [code, bi] of Object.entries(SPEC_BANKS)) {
    t.equal(banks.find((b) => b.short_code === code)?.bi_code, bi, `${code} clears as ${bi}`);
  }
  const more = { BSI: '451', BCA_SYARIAH: '536', JAGO: '542', SEABANK: '535', BJB: '110', DKI: '111', OCBC: '028', UOB: '023' };
  for (const [code, bi] of Object.entries(more)) t.equal(banks.find((b) => b.short_code === code)?.bi_code, bi, `${code} clears as ${bi}`);
  t.equal(banks.find((b) => b.short_code === 'BCA').name, 'Bank Central Asia');
});

t.test("GET /v1/ewallets lists the spec's seven e-wallets, fields exactly as spec 2.7", async (t) => {
  const res = await get('/v1/ewallets');
  t.equal(res.status, 200);
  t.strictSame(Object.keys(res.json).sort(), ['data', 'success'], 'list without pagination: no meta');
  t.equal(res.headers['cache-control'], 'private, max-age=3600');
  t.strictSame(codesOf(res), SPEC_EWALLETS, 'all seven, in sort_order');
  const names = res.json.data.map((e: any) => e.name);
  t.strictSame(names, ['GoPay', 'GoPay Driver', 'OVO', 'ShopeePay', 'LinkAja', 'DANA', 'KasPro']);
  for (const [i, e] of res.json.data.entries()) {
    t.strictSame(Object.keys(e).sort(), ['id', 'is_enabled', 'logo_url', 'name', 'short_code', 'sort_order'], e.short_code);
    t.match(e, { id: UUID, is_enabled: true });
    t.ok(Number.isInteger(e.sort_order) && (i === 0 || res.json.data[i - 1].sort_order < e.sort_order), 'sort_order ascending');
    t.equal(e.logo_url, `${BASE_URL}/assets/ewallets/${e.short_code.toLowerCase()}.svg`, 'an absolute URL on the public base URL');
  }
});

t.test('an e-wallet logo is served without an API key', async (t) => {
  const dana = (await get('/v1/ewallets')).json.data.find((e: any) => e.short_code === 'DANA');
  const logo = await get(new URL(dana.logo_url).pathname, {});
  t.equal(logo.status, 200);
  t.match(logo.headers['content-type'], /^image\/svg\+xml/);
  t.match(logo.text, /^<svg [^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg".*>DANA<\/text><\/svg>$/);
  t.match(logo.headers['content-security-policy'], /default-src 'none'/, 'nothing inside may run');
  t.equal((await get('/assets/ewallets/paypal.svg', {})).status, 404);
  t.equal((await get('/assets/ewallets/dana.png', {})).status, 404);
});

t.test('authenticated like every /v1 route', async (t) => {
  for (const path of ['/v1/banks', '/v1/ewallets']) {
    const none = await get(path, {});
    t.equal(none.status, 401, `${path} without a key`);
    t.equal(none.json.error.code, 'UNAUTHORIZED');
    t.notOk(none.headers['cache-control']?.includes('max-age'), 'a refusal is not cacheable as a list');
    const wrong = await get(path, { 'x-api-key': 'f'.repeat(64) });
    t.equal(wrong.status, 401, `${path} with an unknown key`);
  }
  const suspended = await makeMerchant(api.ctx, { status: 'SUSPENDED' });
  const res = await get('/v1/ewallets', { 'x-api-key': suspended.api_key });
  t.equal(res.status, 403);
  t.equal(res.json.error.code, 'MERCHANT_INACTIVE');
});

t.test('the lists come from a cache: served while the tables are locked', async (t) => {
  await get('/v1/banks');
  await get('/v1/ewallets');
  const locker = new pg.Client({ connectionString: databaseUrl });
  await locker.connect();
  await locker.query('begin');
  await locker.query('lock table banks, ewallets in access exclusive mode');
  try {
    // Without the cache the API's select would wait for this lock and the deadline would pass.
    const within = <T>(p: Promise<T>, what: string) =>
      Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} touched the locked table`)), 2_000).unref())]);
    const [banks, ewallets] = await Promise.all([within(get('/v1/banks'), 'GET /v1/banks'), within(get('/v1/ewallets'), 'GET /v1/ewallets')]);
    t.equal(banks.status, 200);
    t.ok(codesOf(banks).includes('BCA'));
    t.strictSame(codesOf(ewallets), SPEC_EWALLETS);
  } finally {
    await locker.query('rollback');
    await locker.end();
  }
});

t.test('ewallets:disable in another process drops the entry from the next GET; enable brings it back', async (t) => {
  t.strictSame(codesOf(await get('/v1/ewallets')), SPEC_EWALLETS, 'cached with DANA');

  const off = await ops('ewallets:disable', '--code', 'DANA', '--json');
  t.equal(off.code, 0, off.stderr);
  t.match(JSON.parse(off.stdout), { ewallet: { short_code: 'DANA', name: 'DANA', is_enabled: false } });
  // The cache lives an hour: DANA can only go because the change reached this API process.
  const without = await untilCodes('/v1/ewallets', (codes) => !codes.includes('DANA'), 'DANA to leave the cached list');
  t.strictSame(codesOf(without), SPEC_EWALLETS.filter((c) => c !== 'DANA'), 'only the enabled ones, still in order');

  const listed = JSON.parse((await ops('ewallets:list', '--json')).stdout);
  t.match(listed.ewallets.find((e: any) => e.short_code === 'DANA'), { is_enabled: false }, 'operators still see it');
  t.equal(listed.ewallets.length, 7);

  const on = await ops('ewallets:enable', '--code', 'DANA');
  t.equal(on.code, 0, on.stderr);
  t.match(on.stdout, /e-wallet DANA \(DANA\) enabled/);
  await untilCodes('/v1/ewallets', (codes) => codes.includes('DANA'), 'DANA to come back');
  t.strictSame(codesOf(await get('/v1/ewallets')), SPEC_EWALLETS, 'back in its place');
});

t.test('banks:disable and banks:enable act on the cached GET /v1/banks; short codes are case-insensitive', async (t) => {
  t.ok(codesOf(await get('/v1/banks')).includes('BCA'), 'cached with BCA');
  const off = await ops('banks:disable', '--code', 'BCA');
  t.equal(off.code, 0, off.stderr);
  t.match(off.stdout, /bank BCA \(Bank Central Asia\) disabled/);
  await untilCodes('/v1/banks', (codes) => !codes.includes('BCA'), 'BCA to leave the cached list');

  const row = await findBankByShortCode(api.ctx.pool, 'BCA');
  t.match(row, { short_code: 'BCA', is_enabled: false }, 'a disabled bank is still found (BANK_DISABLED, not BANK_NOT_FOUND)');
  const listed = JSON.parse((await ops('banks:list', '--json')).stdout);
  t.match(listed.banks.find((b: any) => b.short_code === 'BCA'), { bi_code: '014', is_enabled: false });
  t.match((await ops('banks:list')).stdout, /^BCA\s+014\s+disabled\s+Bank Central Asia$/m, 'human listing');

  const on = await ops('banks:enable', '--code', 'bca', '--json');
  t.equal(on.code, 0, on.stderr);
  t.match(JSON.parse(on.stdout), { bank: { short_code: 'BCA', is_enabled: true } });
  const back = await untilCodes('/v1/banks', (codes) => codes.includes('BCA'), 'BCA to come back');
  t.equal(codesOf(back)[0], 'BCA', 'first again');
});

t.test('a change made in plain SQL (an operator in psql) also reaches the cache', async (t) => {
  t.ok(codesOf(await get('/v1/banks')).includes('PANIN'), 'cached with PANIN');
  await sql(`update banks set is_enabled = false where short_code = 'PANIN'`);
  await untilCodes('/v1/banks', (codes) => !codes.includes('PANIN'), 'PANIN to leave the cached list');
  await sql(`update banks set is_enabled = true where short_code = 'PANIN'`);
  await untilCodes('/v1/banks', (codes) => codes.includes('PANIN'), 'PANIN to come back');
});

t.test('a change missed while the listener was disconnected is not served after it reconnects', async (t) => {
  t.strictSame(codesOf(await get('/v1/ewallets')), SPEC_EWALLETS, 'cached with OVO');
  const listeners = () => sql(`select pid from pg_stat_activity where datname = current_database() and application_name = 'kasir-api-listener'`);
  const [listener] = await listeners();
  t.ok(listener, 'the API process holds a listening connection');
  // Terminate it and change the table at once: the listener re-connects only after a delay.
  await sql('select pg_terminate_backend($1)', [listener.pid]);
  await sql(`update ewallets set is_enabled = false where short_code = 'OVO'`);
  await untilCodes('/v1/ewallets', (codes) => !codes.includes('OVO'), 'OVO to leave the list after the reconnect');
  const [again] = await eventually(async () => ((await listeners()).length === 1 ? listeners() : undefined), 'one listener again');
  t.not(again.pid, listener.pid, 'a new connection, still exactly one');

  t.equal((await ops('ewallets:enable', '--code', 'OVO')).code, 0);
  await untilCodes('/v1/ewallets', (codes) => codes.includes('OVO'), 'OVO back through the new connection');
});

t.test('unknown or missing codes exit non-zero with a message', async (t) => {
  for (const cmd of ['banks:disable', 'banks:enable']) {
    const res = await ops(cmd, '--code', 'NOPE');
    t.equal(res.code, 1, cmd);
    t.match(res.stderr, /no bank with short code NOPE/);
  }
  for (const cmd of ['ewallets:disable', 'ewallets:enable']) {
    const res = await ops(cmd, '--code', 'PAYPAL', '--json');
    t.equal(res.code, 1, cmd);
    t.match(JSON.parse(res.stdout), { error: /no e-wallet with short code PAYPAL/ });
  }
  const missing = await ops('banks:disable');
  t.equal(missing.code, 64);
  t.match(missing.stderr, /--code/);
  t.strictSame(codesOf(await get('/v1/ewallets')), SPEC_EWALLETS, 'nothing changed');
});

t.test('the lookups other modules use', async (t) => {
  const bca = await findBankByShortCode(api.ctx.pool, 'bca');
  t.strictSame(Object.keys(bca ?? {}).sort(), ['bi_code', 'id', 'is_enabled', 'name', 'short_code', 'sort_order']);
  t.match(bca, { id: UUID, short_code: 'BCA', name: 'Bank Central Asia', bi_code: '014', is_enabled: true });
  t.strictSame(await findBankById(api.ctx.pool, bca!.id), bca);
  t.equal(await findBankById(api.ctx.pool, randomUUID()), null);
  t.equal(await findBankById(api.ctx.pool, 'BCA'), null, 'not a UUID: null, not an error');
  t.equal(await findBankByShortCode(api.ctx.pool, 'NOPE'), null);

  const dana = await findEwalletByShortCode(api.ctx.pool, 'Dana');
  t.strictSame(Object.keys(dana ?? {}).sort(), ['id', 'is_enabled', 'logo_url', 'name', 'short_code', 'sort_order']);
  t.match(dana, { id: UUID, short_code: 'DANA', name: 'DANA', is_enabled: true, logo_url: '/assets/ewallets/dana.svg' });
  t.equal(await findEwalletByShortCode(api.ctx.pool, 'PAYPAL'), null);
});
