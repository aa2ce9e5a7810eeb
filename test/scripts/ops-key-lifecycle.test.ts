// Key lifecycle through the ops CLI (issue 21, item 6): API-key rotation with a grace period
// the operator chooses, legacy client secret rotation, and secrets read from a file or stdin
// rather than argv (where `ps` and shell history keep them).
import { createHash, randomBytes } from 'node:crypto';
import t from 'tap';
import { getMerchant, webhookSecretOf } from '../../db/merchants.ts';
import { sql } from '../../db/pool.ts';
import { masterKeyId } from '../../db/secrets.ts';
import { getVendor } from '../../db/vendors.ts';
import { startApi } from '../helpers/api.ts';
import { testConfig, testEnv } from '../helpers/config.ts';
import { testDatabase } from '../helpers/db.ts';
import { call } from '../helpers/http.ts';
import { ops as runOps, opsWithStdin } from '../helpers/processes.ts';

const databaseUrl = await testDatabase(t);
const env = testEnv(databaseUrl);
const api = await startApi(t, testConfig(databaseUrl));
const { pool, sealer } = api.ctx;
const ops = (...args: string[]) => runOps(env, ...args);

/** 404: authenticated (no such route); 401: the key is refused. */
const probe = async (apiKey: string) => (await call(api.url, { path: '/v1/probe', headers: { 'x-api-key': apiKey } })).status;

async function newMerchant(...extra: string[]) {
  const res = await ops('merchant:create', '--name', `Toko ${randomBytes(3).toString('hex')}`, '--settlement', 'WALLET', ...extra, '--json');
  if (res.code !== 0) throw new Error(res.stderr || res.stdout);
  return JSON.parse(res.stdout);
}

t.test('rotate-key --grace-minutes keeps the old key working until the grace ends', async (t) => {
  const m = await newMerchant();
  const started = Date.now();
  const res = await ops('merchant:rotate-key', '--merchant', m.merchant_id, '--grace-minutes', '5', '--json');
  t.equal(res.code, 0, res.stderr);
  const rotated = JSON.parse(res.stdout);
  const until = Date.parse(rotated.previous_key_valid_until);
  t.ok(until >= started + 5 * 60_000 - 2_000 && until <= Date.now() + 5 * 60_000 + 2_000, 'valid for five minutes');
  t.equal(await probe(m.api_key), 404, 'old key still works during the grace');
  t.equal(await probe(rotated.api_key), 404, 'new key works');

  // The grace ends: move the stored expiry into the past rather than waiting five minutes.
  await pool.query(sql.unsafe`
    update merchants set previous_api_key_expires_at = now() - interval '1 second' where id = ${m.merchant_id}`);
  t.equal(await probe(m.api_key), 401, 'old key refused once the grace is over');
  t.equal(await probe(rotated.api_key), 404, 'new key unaffected');
});

t.test('rotating a kasir_sk_ key an earlier release issued gives a 64-hex key; the old one lasts its grace', async (t) => {
  const m = await newMerchant();
  const prefixed = `kasir_sk_${randomBytes(32).toString('hex')}`;
  await pool.query(sql.unsafe`update merchants set api_key_hash = ${sql.binary(createHash('sha256').update(prefixed).digest())} where id = ${m.merchant_id}`);
  t.equal(await probe(prefixed), 404, 'the prefixed key works as issued');
  const rotated = JSON.parse((await ops('merchant:rotate-key', '--merchant', m.merchant_id, '--grace-minutes', '5', '--json')).stdout);
  t.match(rotated.api_key, /^[0-9a-f]{64}$/, 'the new key has the spec\'s form (5.1)');
  t.equal(await probe(prefixed), 404, 'the prefixed key keeps working during the grace');
  t.equal(await probe(rotated.api_key), 404);
});

t.test('without --grace-minutes the old key stops at once; a second rotation ends the first grace', async (t) => {
  const m = await newMerchant();
  const first = JSON.parse((await ops('merchant:rotate-key', '--merchant', m.merchant_id, '--grace-minutes', '60', '--json')).stdout);
  t.equal(await probe(m.api_key), 404);
  const second = JSON.parse((await ops('merchant:rotate-key', '--merchant', m.merchant_id, '--json')).stdout);
  t.equal(second.previous_key_valid_until, null);
  t.equal(await probe(m.api_key), 401, 'the key from before the first rotation');
  t.equal(await probe(first.api_key), 401, 'the key from the first rotation');
  t.equal(await probe(second.api_key), 404);

  const text = await ops('merchant:rotate-key', '--merchant', m.merchant_id, '--grace-minutes', '1');
  t.match(text.stdout, /previous key keeps working until \d{4}-/);
  for (const bad of ['-1', '10081', 'soon', '1.5']) {
    const res = await ops('merchant:rotate-key', '--merchant', m.merchant_id, '--grace-minutes', bad);
    t.equal(res.code, 64, `--grace-minutes ${bad} refused`);
    t.match(res.stderr, /--grace-minutes/);
  }
});

t.test('merchant:rotate-legacy-secret prints a new secret once; the old one stops at once', async (t) => {
  const m = await newMerchant();
  const orderId = `LGC-${randomBytes(4).toString('hex')}`;
  const query = (secret: string) =>
    call(api.url, {
      path: '/api/order/query',
      body: { clientId: m.legacy_client_id, orderId, signature: createHash('sha512').update(`${m.legacy_client_id}|${orderId}|${secret}`).digest('hex') },
    });
  t.equal((await query(m.legacy_client_secret)).status, 404, 'old secret authenticates (unknown order)');

  const res = await ops('merchant:rotate-legacy-secret', '--merchant', m.merchant_id, '--json');
  t.equal(res.code, 0, res.stderr);
  const rotated = JSON.parse(res.stdout);
  t.match(rotated, { merchant_id: m.merchant_id, legacy_client_secret: /^[0-9a-f]{48}$/ });
  t.not(rotated.legacy_client_secret, m.legacy_client_secret);
  t.equal((await query(m.legacy_client_secret)).status, 401, 'old secret refused');
  t.equal((await query(rotated.legacy_client_secret)).status, 404, 'new secret authenticates');
  t.equal((await getMerchant(pool, m.merchant_id)).legacy_client_id, m.legacy_client_id, 'client id unchanged');

  const text = await ops('merchant:rotate-legacy-secret', '--merchant', m.merchant_id);
  t.match(text.stdout, /new legacy_client_secret: [0-9a-f]{48}\s+\(shown only now/);
  const missing = await ops('merchant:rotate-legacy-secret', '--merchant', '00000000-0000-4000-8000-000000000000');
  t.equal(missing.code, 1);
  t.match(missing.stderr, /no merchant/);
});

t.test('secret flags read a file or stdin instead of argv', async (t) => {
  const dir = t.testdir({
    'webhook.txt': 'whsec_from-a-file-0123456789\n',
    'empty.txt': '',
    'secret-key.txt': 'xnd_development_from_file\r\n',
  });
  const created = await newMerchant('--webhook-secret-file', `${dir}/webhook.txt`);
  t.equal(created.webhook_secret, 'whsec_from-a-file-0123456789', 'one trailing newline dropped');
  t.equal(webhookSecretOf(sealer, await getMerchant(pool, created.merchant_id)), 'whsec_from-a-file-0123456789');

  const viaStdin = await opsWithStdin(env, 'whsec_from-stdin-0123456789\n', 'merchant:set-webhook-secret', '--merchant', created.merchant_id, '--secret-file', '-', '--json');
  t.equal(viaStdin.code, 0, viaStdin.stderr);
  t.equal(webhookSecretOf(sealer, await getMerchant(pool, created.merchant_id)), 'whsec_from-stdin-0123456789');

  const vendor = await opsWithStdin(env, 'tok-from-stdin-123', 'vendor:add', '--sandbox', '--code', 'xnd-file', '--kind', 'xendit', '--base-url', 'https://api.xendit.co',
    '--secret-key-file', `${dir}/secret-key.txt`, '--callback-token-file', '-');
  t.equal(vendor.code, 0, vendor.stderr);
  t.same((await getVendor(pool, sealer, 'xnd-file'))?.credentials, { secretKey: 'xnd_development_from_file', callbackToken: 'tok-from-stdin-123' });

  t.equal((await ops('merchant:set-webhook-secret', '--merchant', created.merchant_id, '--secret', 'whsec_argv-still-works-0123')).code, 0, 'the argv flag still works');

  const both = await ops('merchant:set-webhook-secret', '--merchant', created.merchant_id, '--secret', 'whsec_argv-0123456789', '--secret-file', `${dir}/webhook.txt`);
  t.equal(both.code, 64);
  t.match(both.stderr, /give --secret or --secret-file, not both/);
  const twoStdin = await opsWithStdin(env, 'x', 'vendor:add', '--code', 'xnd-two', '--kind', 'xendit', '--base-url', 'https://api.xendit.co', '--secret-key-file', '-', '--callback-token-file', '-');
  t.equal(twoStdin.code, 64);
  t.match(twoStdin.stderr, /only one secret can come from stdin/);
  const empty = await ops('merchant:set-webhook-secret', '--merchant', created.merchant_id, '--secret-file', `${dir}/empty.txt`);
  t.equal(empty.code, 64);
  t.match(empty.stderr, /--secret-file: .*empty\.txt is empty/);
  const absent = await ops('merchant:set-webhook-secret', '--merchant', created.merchant_id, '--secret-file', `${dir}/nope.txt`);
  t.equal(absent.code, 64);
  t.match(absent.stderr, /--secret-file: cannot read .*nope\.txt \(ENOENT\)/);
  const short = await opsWithStdin(env, 'short', 'merchant:set-webhook-secret', '--merchant', created.merchant_id, '--secret-file', '-');
  t.equal(short.code, 64, "the command's own rules apply to a secret from a file");
  t.match(short.stderr, /--secret must be at least 16/);
  t.equal(webhookSecretOf(sealer, await getMerchant(pool, created.merchant_id)), 'whsec_argv-still-works-0123', 'refusals changed nothing');
});

t.test('help names the file form of every secret flag and why', async (t) => {
  const res = await ops('help');
  t.match(res.stdout, /--FLAG-file PATH \(PATH "-" reads stdin\)/);
  t.match(res.stdout, /visible to other users in `ps`/);
  for (const flag of ['--webhook-secret-file', '--secret-file', '--secret-key-file', '--callback-token-file', '--server-key-file', '--iris-creator-key-file',
    '--iris-approver-key-file', '--iris-merchant-key-file', '--client-secret-file']) {
    t.match(res.stdout, flag);
  }
  t.match(res.stdout, /merchant:rotate-key --merchant ID \[--grace-minutes N\]/);
  t.match(res.stdout, /merchant:rotate-legacy-secret --merchant ID/);
  t.match(res.stdout, /secrets:reseal \[--check\]/);
});

t.test('the ops CLI reads the master-key settings as every process does, and refuses bad ones by name', async (t) => {
  const previous = '5a'.repeat(32);
  const check = await runOps({ ...env, KASIR_MASTER_KEYS_PREVIOUS: previous }, 'secrets:reseal', '--check', '--json');
  t.equal(check.code, 0, check.stderr);
  t.match(JSON.parse(check.stdout), { current_key_id: sealer.keyId, previous_key_ids: [masterKeyId(previous)], remaining: 0 });
  const bad = await runOps({ ...env, KASIR_MASTER_KEYS_PREVIOUS: 'not-a-key' }, 'secrets:reseal', '--check');
  t.equal(bad.code, 1);
  t.match(bad.stderr, /KASIR_MASTER_KEYS_PREVIOUS\.0: keys of 64 hex characters/);
  const both = await runOps({ ...env, KASIR_MASTER_KEY_FILE: '/dev/null' }, 'secrets:reseal', '--check');
  t.equal(both.code, 1);
  t.match(both.stderr, /give KASIR_MASTER_KEY or KASIR_MASTER_KEY_FILE, not both/);
});
