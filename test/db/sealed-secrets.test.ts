// Sealed secrets are bound to their row (issue 21, item 7): a ciphertext copied into another
// merchant's or vendor's row does not open there, and values sealed before binding still open
// and are rewritten bound by `ops secrets:reseal`.
import { createCipheriv, createHash, randomBytes } from 'node:crypto';
import t from 'tap';
import { z } from 'zod';
import { getMerchant, legacyClientSecretOf, webhookSecretOf } from '../../db/merchants.ts';
import { sql } from '../../db/pool.ts';
import { createSealer, isUnbound } from '../../db/secrets.ts';
import { getVendor, upsertVendor } from '../../db/vendors.ts';
import { startApi } from '../helpers/api.ts';
import { testConfig, testEnv, TEST_MASTER_KEY } from '../helpers/config.ts';
import { testDatabase } from '../helpers/db.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call } from '../helpers/http.ts';
import { ops } from '../helpers/processes.ts';

const databaseUrl = await testDatabase(t);
const env = testEnv(databaseUrl);
const api = await startApi(t, testConfig(databaseUrl));
const { pool, sealer } = api.ctx;

/** A value as Kasir sealed it before binding: version 1, no additional data. */
function sealUnbound(plaintext: string, masterKeyHex = TEST_MASTER_KEY): Buffer {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', Buffer.from(masterKeyHex, 'hex'), nonce);
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([Buffer.from([1]), nonce, cipher.getAuthTag(), body]);
}

const notHere = { name: 'SealedSecretError' };

const sealedColumns = z.object({ webhook_secret_enc: z.instanceof(Buffer).nullable(), legacy_client_secret_enc: z.instanceof(Buffer) });
const readSealed = (id: string) =>
  pool.one(sql.type(sealedColumns)`select webhook_secret_enc, legacy_client_secret_enc from merchants where id = ${id}`);
const vendorSealed = (code: string) =>
  pool.oneFirst(sql.type(z.object({ credentials_enc: z.instanceof(Buffer) }))`select credentials_enc from vendors where code = ${code}`);

t.test('a value opens only at the table, column and row it was sealed for', async (t) => {
  const at = { table: 'merchants', column: 'legacy_client_secret_enc', rowId: 'a' } as const;
  const sealed = sealer.seal('s3cret', at);
  t.equal(sealed[0], 2, 'written bound');
  t.equal(sealer.open(sealed, at), 's3cret');
  t.throws(() => sealer.open(sealed, { ...at, rowId: 'b' }), notHere, 'another row');
  t.throws(() => sealer.open(sealed, { ...at, column: 'webhook_secret_enc' }), notHere, 'another column');
  t.throws(() => sealer.open(sealed, { table: 'vendors', column: 'credentials_enc', rowId: 'a' }), notHere, 'another table');
  t.throws(() => createSealer('1f'.repeat(32)).open(sealed, at), notHere, 'another master key');
  const altered = Buffer.from(sealed);
  altered[altered.length - 1] ^= 1;
  t.throws(() => sealer.open(altered, at), notHere, 'altered');
});

t.test("merchant A's sealed secrets copied into merchant B's row do not open there", async (t) => {
  const a = await makeMerchant(api.ctx, { webhookSecret: `whsec_${randomBytes(18).toString('base64')}` });
  const b = await makeMerchant(api.ctx, { webhookSecret: `whsec_${randomBytes(18).toString('base64')}` });
  const fromA = await readSealed(a.merchant_id);
  // Someone who can write the database but holds no master key, and knows A's secrets (A is theirs).
  await pool.query(sql.unsafe`
    update merchants
    set legacy_client_secret_enc = ${sql.binary(fromA.legacy_client_secret_enc)}, webhook_secret_enc = ${sql.binary(fromA.webhook_secret_enc!)}
    where id = ${b.merchant_id}`);
  const tampered = await getMerchant(pool, b.merchant_id);
  t.throws(() => legacyClientSecretOf(sealer, tampered), { ...notHere, message: new RegExp(`merchants\\.legacy_client_secret_enc of row ${b.merchant_id} does not open`) });
  t.throws(() => webhookSecretOf(sealer, tampered), notHere);

  // The attack through the API: a legacy query for B signed with A's secret is not B's.
  const orderId = `LGC-${randomBytes(4).toString('hex')}`;
  const signature = createHash('sha512').update(`${b.legacy_client_id}|${orderId}|${a.legacy_client_secret}`).digest('hex');
  const res = await call(api.url, { path: '/api/order/query', body: { clientId: b.legacy_client_id, orderId, signature } });
  t.equal(res.status, 500, 'an integrity fault of the server, not an authenticated request');
  t.notMatch(res.text, a.legacy_client_secret, 'no secret in the answer');
  t.notMatch(res.text, b.legacy_client_secret);

  // A itself is untouched.
  t.equal(legacyClientSecretOf(sealer, await getMerchant(pool, a.merchant_id)), a.legacy_client_secret);
});

t.test("vendor credentials copied into another vendor's row do not open there", async (t) => {
  await upsertVendor(pool, sealer, { code: 'own-sim', kind: 'simulator', baseUrl: 'http://127.0.0.1:1', credentials: { secret: 'attacker-knows-this' } });
  await upsertVendor(pool, sealer, { code: 'real-sim', kind: 'simulator', baseUrl: 'http://127.0.0.1:2', credentials: { secret: 'the-real-callback-secret' } });
  await pool.query(sql.unsafe`update vendors set credentials_enc = ${sql.binary(await vendorSealed('own-sim'))} where code = 'real-sim'`);
  await t.rejects(getVendor(pool, sealer, 'real-sim'), { ...notHere, message: /vendors\.credentials_enc of row real-sim does not open/ });
  t.same((await getVendor(pool, sealer, 'own-sim'))?.credentials, { secret: 'attacker-knows-this' });
});

t.test('values sealed before binding still open, and secrets:reseal binds them once', async (t) => {
  const m = await makeMerchant(api.ctx);
  await pool.query(sql.unsafe`
    update merchants
    set legacy_client_secret_enc = ${sql.binary(sealUnbound(m.legacy_client_secret))}, webhook_secret_enc = ${sql.binary(sealUnbound('whsec_before-binding'))}
    where id = ${m.merchant_id}`);
  await pool.query(sql.unsafe`
    insert into vendors (code, kind, base_url, credentials_enc)
    values ('old-sim', 'simulator', 'http://127.0.0.1:3', ${sql.binary(sealUnbound(JSON.stringify({ secret: 'from-before' })))})`);

  const before = await getMerchant(pool, m.merchant_id);
  t.ok(isUnbound(before.legacy_client_secret_enc), 'stored the old way');
  t.equal(legacyClientSecretOf(sealer, before), m.legacy_client_secret, 'old legacy client secret opens');
  t.equal(webhookSecretOf(sealer, before), 'whsec_before-binding', 'old webhook secret opens');
  t.same((await getVendor(pool, sealer, 'old-sim'))?.credentials, { secret: 'from-before' }, 'old vendor credentials open');
  const orderId = `LGC-${randomBytes(4).toString('hex')}`;
  const signature = createHash('sha512').update(`${m.legacy_client_id}|${orderId}|${m.legacy_client_secret}`).digest('hex');
  const query = await call(api.url, { path: '/api/order/query', body: { clientId: m.legacy_client_id, orderId, signature } });
  t.equal(query.status, 404, 'the legacy API authenticates with the old value (unknown order, past the signature)');

  const res = await ops(env, 'secrets:reseal', '--json');
  t.equal(res.code, 0, res.stderr);
  const report = JSON.parse(res.stdout);
  t.match(report, {
    resealed: { 'merchants.webhook_secret_enc': 1, 'merchants.legacy_client_secret_enc': 1, 'vendors.credentials_enc': 1 },
    failed: [],
    remaining: 0,
  });

  const after = await getMerchant(pool, m.merchant_id);
  t.equal(after.legacy_client_secret_enc[0], 2, 'now bound');
  t.equal(after.webhook_secret_enc![0], 2);
  t.equal((await vendorSealed('old-sim'))[0], 2);
  t.equal(legacyClientSecretOf(sealer, after), m.legacy_client_secret, 'same secret after the reseal');
  t.equal(webhookSecretOf(sealer, after), 'whsec_before-binding');
  t.same((await getVendor(pool, sealer, 'old-sim'))?.credentials, { secret: 'from-before' });
  t.equal((await call(api.url, { path: '/api/order/query', body: { clientId: m.legacy_client_id, orderId, signature } })).status, 404, 'still authenticates');

  const again = JSON.parse((await ops(env, 'secrets:reseal', '--json')).stdout);
  t.same(again.resealed, { 'merchants.webhook_secret_enc': 0, 'merchants.legacy_client_secret_enc': 0, 'vendors.credentials_enc': 0 }, 'a second run changes nothing');
  t.equal(again.remaining, 0);
});

t.test('secrets:reseal names a value it cannot open, leaves it, and exits 1', async (t) => {
  const m = await makeMerchant(api.ctx);
  const foreign = sealUnbound('sealed under another key', '2e'.repeat(32));
  await pool.query(sql.unsafe`update merchants set legacy_client_secret_enc = ${sql.binary(foreign)} where id = ${m.merchant_id}`);
  const res = await ops(env, 'secrets:reseal', '--json');
  t.equal(res.code, 1);
  const report = JSON.parse(res.stdout);
  t.match(report.failed, [{ table: 'merchants', column: 'legacy_client_secret_enc', row_id: m.merchant_id, error: /does not open/ }]);
  t.equal(report.remaining, 1);
  t.same((await readSealed(m.merchant_id)).legacy_client_secret_enc, foreign, 'left as it was');
});
