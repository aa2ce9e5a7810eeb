// Sealed secrets are bound to their row (issue 21, item 7): a ciphertext copied into another
// merchant's or vendor's row does not open there, and values sealed before binding still open
// and are rewritten bound by `ops secrets:reseal`. They name their master key by key id
// (issue 19): KASIR_MASTER_KEY rotates without downtime, previous keys opening what
// `secrets:reseal` has not yet moved to the current one.
import { spawn } from 'node:child_process';
import { createCipheriv, createHash, randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { z } from 'zod';
import { parseMasterKeys } from '../../db/config.ts';
import { getMerchant, legacyClientSecretOf, legacyClientSecretPlace, webhookSecretOf } from '../../db/merchants.ts';
import { createPool, sql } from '../../db/pool.ts';
import { countSealed } from '../../db/secret-reseal.ts';
import { createSealer, isUnbound, masterKeyId, newMasterKey, sealedKeyId, type SealedPlace, type Sealer } from '../../db/secrets.ts';
import { getVendor, upsertVendor, vendorCredentialsPlace } from '../../db/vendors.ts';
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
  t.equal(sealed[0], 3, 'written bound, naming its key');
  t.equal(sealedKeyId(sealed), masterKeyId(TEST_MASTER_KEY));
  t.equal(sealer.keyId, masterKeyId(TEST_MASTER_KEY));
  t.notOk(TEST_MASTER_KEY.includes(sealer.keyId), 'the key id is no part of the key');
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
  t.equal(after.legacy_client_secret_enc[0], 3, 'now bound, under the current key');
  t.equal(sealedKeyId(after.legacy_client_secret_enc), sealer.keyId);
  t.equal(sealedKeyId(after.webhook_secret_enc!), sealer.keyId);
  t.equal(sealedKeyId(await vendorSealed('old-sim')), sealer.keyId);
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

/** A value as Kasir sealed it before key ids: version 2, bound to its place, naming no key. */
function sealBeforeKeyIds(plaintext: string, place: SealedPlace, masterKeyHex: string): Buffer {
  const fields = ['kasir-sealed', place.table, place.column, place.rowId].map((f) => Buffer.from(f, 'utf8'));
  const additional = Buffer.concat(fields.flatMap((f) => [Buffer.from([0, 0, 0, f.length]), f]));
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', Buffer.from(masterKeyHex, 'hex'), nonce);
  cipher.setAAD(additional);
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([Buffer.from([2]), nonce, cipher.getAuthTag(), body]);
}

const masterKeys = (current: string, previous = '', more: Record<string, string> = {}) =>
  parseMasterKeys({ KASIR_MASTER_KEY: current, KASIR_MASTER_KEYS_PREVIOUS: previous, ...more });

t.test('every stored format opens with the new key current and the old one previous; seals go under the new key', async (t) => {
  const [a, b, c] = [newMasterKey(), newMasterKey(), newMasterKey()];
  const at = { table: 'merchants', column: 'legacy_client_secret_enc', rowId: 'm-1' } as const;
  const unbound = sealUnbound('one', a);
  const beforeKeyIds = sealBeforeKeyIds('two', at, a);
  const underA = createSealer(a).seal('three', at);
  t.equal(sealedKeyId(underA), masterKeyId(a));
  t.equal(sealedKeyId(beforeKeyIds), null, 'a version 2 value names no key');

  const rotating = createSealer(masterKeys(b, a));
  t.equal(rotating.keyId, masterKeyId(b));
  t.same(rotating.previousKeyIds, [masterKeyId(a)]);
  t.equal(rotating.open(unbound, at), 'one', 'unbound, under the previous key');
  t.equal(rotating.open(beforeKeyIds, at), 'two', 'without key id, under the previous key');
  t.equal(rotating.open(underA, at), 'three', 'named the previous key');
  const underB = rotating.seal('four', at);
  t.equal(sealedKeyId(underB), masterKeyId(b), 'new seals use the current key');
  t.equal(createSealer(b).open(underB, at), 'four');

  // The first step of a rotation: the new key reaches every process as a previous key, so one
  // already sealing under it never writes what another cannot open.
  t.equal(createSealer(masterKeys(a, b)).open(underB, at), 'four', 'a previous key may be the next one');

  const withoutA = createSealer(b);
  t.throws(() => withoutA.open(underA, at), {
    ...notHere,
    message: `sealed secret in merchants.legacy_client_secret_enc of row m-1 is sealed under master key ${masterKeyId(a)}, which is not configured (current ${masterKeyId(b)}, no previous)`,
  }, 'the error names the missing key id');
  t.throws(() => withoutA.open(beforeKeyIds, at), { ...notHere, message: new RegExp(`does not open under any configured master key \\(current ${masterKeyId(b)}, no previous\\)`) });
  t.throws(() => withoutA.open(unbound, at), notHere);
  t.throws(() => rotating.open(createSealer(c).seal('x', at), at), { ...notHere, message: new RegExp(`master key ${masterKeyId(c)}, which is not configured \\(current ${masterKeyId(b)}, previous ${masterKeyId(a)}\\)`) });
  t.throws(() => rotating.open(underA, { ...at, rowId: 'm-2' }), { ...notHere, message: new RegExp(`does not open under master key ${masterKeyId(a)}: sealed for another row`) });
  const relabelled = Buffer.from(underA);
  Buffer.from(masterKeyId(b), 'hex').copy(relabelled, 1);
  t.throws(() => rotating.open(relabelled, at), notHere, 'a key id changed to another configured key does not open');

  const strict = createSealer(masterKeys(b, a, { KASIR_SEALED_REQUIRE_BOUND: 'true' }));
  t.throws(() => strict.open(unbound, at), { ...notHere, message: /is unbound \(sealed before row binding\) and KASIR_SEALED_REQUIRE_BOUND refuses those/ });
  t.equal(strict.open(beforeKeyIds, at), 'two', 'bound values still open');
  t.equal(strict.open(underA, at), 'three');

  t.equal(createSealer(masterKeys(b, `${a},${b}`)).open(underA, at), 'three', 'the current key listed again as previous is harmless');
});

t.test('a rotation: secrets:reseal moves every value to the new key in batches; killed midway all still open; then the old key goes', async (t) => {
  const url = await testDatabase(t);
  const db = await createPool(url, { size: 4 });
  t.teardown(() => db.end());
  const [a, b] = [newMasterKey(), newMasterKey()];
  const [idA, idB] = [masterKeyId(a), masterKeyId(b)];

  // Everything sealed under A, in every format in use: more merchants than one batch (500).
  const underA = createSealer(a);
  const merchants = new Map<string, { webhook: string; legacy: string }>();
  for (let i = 0; i < 520; i += 20) {
    await Promise.all(Array.from({ length: 20 }, async () => {
      const webhook = `whsec_${randomBytes(18).toString('base64')}`;
      const m = await makeMerchant({ pool: db, sealer: underA }, { webhookSecret: webhook });
      merchants.set(m.merchant_id, { webhook, legacy: m.legacy_client_secret });
    }));
  }
  const [oldest] = merchants.keys();
  const { legacy } = merchants.get(oldest)!;
  merchants.set(oldest, { webhook: 'whsec_from-before-key-ids', legacy });
  await db.query(sql.unsafe`
    update merchants
    set legacy_client_secret_enc = ${sql.binary(sealUnbound(legacy, a))},
        webhook_secret_enc = ${sql.binary(sealBeforeKeyIds('whsec_from-before-key-ids', { table: 'merchants', column: 'webhook_secret_enc', rowId: oldest }, a))}
    where id = ${oldest}`);
  await upsertVendor(db, underA, { code: 'sim-a', kind: 'simulator', baseUrl: 'http://127.0.0.1:1', credentials: { secret: 'vendor-under-a' } });
  await db.query(sql.unsafe`
    insert into vendors (code, kind, base_url, credentials_enc)
    values ('sim-v2', 'simulator', 'http://127.0.0.1:2',
            ${sql.binary(sealBeforeKeyIds(JSON.stringify({ secret: 'vendor-before-key-ids' }), { table: 'vendors', column: 'credentials_enc', rowId: 'sim-v2' }, a))})`);
  const total = 520 * 2 + 2;

  const allSealed = async () => [
    ...await db.any(sql.type(z.object({ id: z.string(), webhook_secret_enc: z.instanceof(Buffer), legacy_client_secret_enc: z.instanceof(Buffer) }))`
      select id, webhook_secret_enc, legacy_client_secret_enc from merchants order by id`),
    ...await db.any(sql.type(z.object({ code: z.string(), credentials_enc: z.instanceof(Buffer) }))`select code, credentials_enc from vendors order by code`),
  ];
  const keyIdsOf = async () => (await allSealed()).flatMap((row) =>
    'code' in row ? [sealedKeyId(row.credentials_enc)] : [sealedKeyId(row.webhook_secret_enc), sealedKeyId(row.legacy_client_secret_enc)]);
  const opensAll = async (sealer: Sealer) => {
    let wrong = 0;
    for (const row of await allSealed()) {
      if ('code' in row) {
        const secret = JSON.parse(sealer.open(row.credentials_enc, vendorCredentialsPlace(row.code))).secret;
        if (secret !== { 'sim-a': 'vendor-under-a', 'sim-v2': 'vendor-before-key-ids' }[row.code]) wrong++;
      } else if (webhookSecretOf(sealer, row) !== merchants.get(row.id)!.webhook || legacyClientSecretOf(sealer, row) !== merchants.get(row.id)!.legacy) {
        wrong++;
      }
    }
    return wrong;
  };

  // Step 2 of the procedure: B current, A previous, on every process (here: this one and ops).
  const rotating = testEnv(url, { KASIR_MASTER_KEY: b, KASIR_MASTER_KEYS_PREVIOUS: a });
  t.equal(await opensAll(createSealer(masterKeys(b, a))), 0, 'every value opens before any is resealed');

  const before = await allSealed();
  const check = await ops(rotating, 'secrets:reseal', '--check', '--json');
  t.equal(check.code, 0, check.stderr);
  t.same(JSON.parse(check.stdout), {
    current_key_id: idB, previous_key_ids: [idA], remaining: total, unbound: 1, without_key_id: 2, under_key: { [idA]: total - 3 }, current: 0,
  }, '--check counts what is left, by format and key');
  t.same(await allSealed(), before, '--check writes nothing');

  // Killed midway: a row of the second batch is locked here, so the first batch (500 webhook
  // secrets) commits and the process then waits; it is killed there and its backend ended.
  await db.transaction(async (tx) => {
    const last = [...merchants.keys()].sort().at(-1)!;
    await tx.query(sql.unsafe`select id from merchants where id = ${last} for update`);
    const child = spawn(process.execPath, [fileURLToPath(new URL('../../scripts/ops.ts', import.meta.url)), 'secrets:reseal'], {
      env: { ...process.env, ...rotating }, stdio: 'ignore',
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    // pg_stat_activity is read once per transaction unless its snapshot is cleared.
    const pidsOf = async (where: ReturnType<typeof sql.fragment>) => {
      await tx.query(sql.unsafe`select pg_stat_clear_snapshot()`);
      return tx.anyFirst(sql.type(z.object({ pid: z.number() }))`select pid from pg_stat_activity where ${where}`);
    };
    const [waiting] = await pollUntil(async () => {
      const pids = await pidsOf(sql.fragment`datname = current_database() and wait_event_type = 'Lock'`);
      return pids.length ? pids : null;
    });
    child.kill('SIGKILL');
    await exited;
    await tx.query(sql.unsafe`select pg_terminate_backend(${waiting})`);
    await pollUntil(async () => (await pidsOf(sql.fragment`pid = ${waiting}`)).length === 0);
  });
  t.match(await countSealed(db, idB), { current: 500, remaining: total - 500 }, 'the first batch committed, nothing else');
  t.equal(await opensAll(createSealer(masterKeys(b, a))), 0, 'after the kill every value still opens');

  const run = await ops(rotating, 'secrets:reseal', '--json');
  t.equal(run.code, 0, run.stderr);
  t.match(JSON.parse(run.stdout), {
    resealed: { 'merchants.webhook_secret_enc': 20, 'merchants.legacy_client_secret_enc': 520, 'vendors.credentials_enc': 2 },
    failed: [],
    remaining: 0,
    current: total,
  }, 'a rerun picks up what the killed run left');
  t.same(new Set(await keyIdsOf()), new Set([idB]), 'every stored value names key B');

  // Step 4: A is dropped. B now comes from a file, as a mounted secret would.
  const dir = t.testdir({ 'master.key': `${b}\n` });
  const onlyB = testEnv(url, { KASIR_MASTER_KEY: '', KASIR_MASTER_KEY_FILE: `${dir}/master.key` });
  t.equal(await opensAll(createSealer(b)), 0, 'everything opens without A');
  const done = await ops(onlyB, 'secrets:reseal', '--check');
  t.equal(done.code, 0, done.stderr);
  t.match(done.stdout, new RegExp(`current master key ${idB}; previous keys none\\nvalues under the current key: ${total}\\nvalues left to reseal: 0`));

  const settled = await allSealed();
  const again = await ops(onlyB, 'secrets:reseal', '--json');
  t.equal(again.code, 0, again.stderr);
  t.match(JSON.parse(again.stdout), { resealed: { 'merchants.webhook_secret_enc': 0, 'merchants.legacy_client_secret_enc': 0, 'vendors.credentials_enc': 0 }, remaining: 0 });
  t.same(await allSealed(), settled, 'a rerun is a no-op: every value byte for byte as it was');

  // A value under a key no process has (a restore from another installation, say).
  const c = newMasterKey();
  await db.query(sql.unsafe`
    update merchants set legacy_client_secret_enc = ${sql.binary(createSealer(c).seal('from elsewhere', legacyClientSecretPlace(oldest)))} where id = ${oldest}`);
  const restored = await getMerchant(db, oldest);
  t.throws(() => legacyClientSecretOf(createSealer(b), restored), { ...notHere, message: new RegExp(`master key ${masterKeyId(c)}, which is not configured`) });
  const stranger = await ops(onlyB, 'secrets:reseal', '--json');
  t.equal(stranger.code, 1, 'a value that does not open fails the run');
  t.match(JSON.parse(stranger.stdout), {
    failed: [{ table: 'merchants', column: 'legacy_client_secret_enc', row_id: oldest, error: new RegExp(`is sealed under master key ${masterKeyId(c)}, which is not configured`) }],
    remaining: 1,
    under_key: { [masterKeyId(c)]: 1 },
  });
  t.match((await ops(onlyB, 'secrets:reseal', '--check')).stdout, new RegExp(`under key ${masterKeyId(c)} \\(not configured: does not open\\): 1`));
});

t.test('an API process with the new key current and the old one previous serves merchants sealed under the old one', async (t) => {
  const m = await makeMerchant(api.ctx);
  const orderId = `LGC-${randomBytes(4).toString('hex')}`;
  const signature = createHash('sha512').update(`${m.legacy_client_id}|${orderId}|${m.legacy_client_secret}`).digest('hex');
  const query = (url: string) => call(url, { path: '/api/order/query', body: { clientId: m.legacy_client_id, orderId, signature } });
  const next = newMasterKey();
  const rotating = await startApi(t, testConfig(databaseUrl, { KASIR_MASTER_KEY: next, KASIR_MASTER_KEYS_PREVIOUS: TEST_MASTER_KEY }));
  t.equal(rotating.ctx.sealer.keyId, masterKeyId(next));
  t.equal((await query(rotating.url)).status, 404, 'authenticated with the secret under the previous key (unknown order, past the signature)');
  const withoutPrevious = await startApi(t, testConfig(databaseUrl, { KASIR_MASTER_KEY: next }));
  t.equal((await query(withoutPrevious.url)).status, 500, 'without it the secret does not open');
});

/** Polls `probe` until it returns something truthy; fails after 10 s. */
async function pollUntil<T>(probe: () => Promise<T>): Promise<NonNullable<T>> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error('condition not met within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
