// The ops CLI's vendor commands (the operator contract of the real gateways: vendor:add per
// kind, vendor:check, the Midtrans payout-route rule) and its typo suggestions, through the
// real CLI process against a real database and a real simulator.
import pg from 'pg';
import t from 'tap';
import { testEnv } from '../helpers/config.ts';
import { testDatabase } from '../helpers/db.ts';
import { ops as runOps } from '../helpers/processes.ts';
import { startSimulatorInProcess } from '../helpers/simulator.ts';
import { z } from 'zod';
import { createPool, sql } from '../../db/pool.ts';
import { createSealer } from '../../db/secrets.ts';
import { getVendor } from '../../db/vendors.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { eventually } from '../helpers/http.ts';

const databaseUrl = await testDatabase(t);
const env = testEnv(databaseUrl);
const ops = (...args: string[]) => runOps(env, ...args);
const pool = await createPool(databaseUrl, { size: 1, name: 'test' });
t.teardown(() => pool.end());
const sealer = createSealer(env.KASIR_MASTER_KEY!);

t.test('a mistyped command names the nearest one and its usage', async (t) => {
  const res = await ops('vendor:lsit');
  t.equal(res.code, 64);
  t.match(res.stderr, /unknown command vendor:lsit; did you mean vendor:list\?/);
  t.match(res.stderr, /usage: vendor:list/);
  const far = await ops('zzzzzzzz');
  t.equal(far.code, 64);
  t.notMatch(far.stderr, /did you mean/, 'nothing close: the whole help instead');
});

t.test('vendor:add seals each kind’s credentials; re-running it updates the vendor', async (t) => {
  const xendit = await ops('vendor:add', '--sandbox', '--code', 'xnd', '--kind', 'xendit', '--base-url', 'https://api.xendit.co/', '--secret-key', 'xnd_development_abc123', '--callback-token', 'tok-12345678', '--json');
  t.equal(xendit.code, 0, xendit.stderr);
  t.same(JSON.parse(xendit.stdout), { code: 'xnd', kind: 'xendit', base_url: 'https://api.xendit.co', enabled: true, sandbox: true });
  t.same((await getVendor(pool, sealer, 'xnd'))?.credentials, { secretKey: 'xnd_development_abc123', callbackToken: 'tok-12345678' });

  const again = await ops('vendor:add', '--sandbox', '--code', 'xnd', '--kind', 'xendit', '--base-url', 'https://api.xendit.co', '--secret-key', 'xnd_development_rotated', '--callback-token', 'tok-87654321');
  t.equal(again.code, 0, again.stderr);
  t.equal((await getVendor(pool, sealer, 'xnd'))?.credentials.secretKey, 'xnd_development_rotated', 'updated in place');

  const mid = await ops('vendor:add', '--sandbox', '--code', 'mid', '--kind', 'midtrans', '--base-url', 'https://api.sandbox.midtrans.com', '--server-key', 'SB-Mid-server-abc', '--json');
  t.equal(mid.code, 0, mid.stderr);
  t.same((await getVendor(pool, sealer, 'mid'))?.credentials, { serverKey: 'SB-Mid-server-abc', qrisAcquirer: 'gopay' }, 'acquirer defaults to gopay');
  // Sealed: the key's text is nowhere in the stored bytes.
  const raw = await pool.oneFirst(sql.type(z.object({ c: z.instanceof(Buffer) }))`select credentials_enc as c from vendors where code = 'mid'`);
  t.notOk(raw.toString('latin1').includes('SB-Mid-server-abc'));
});

t.test('vendor:add refuses what a kind does not take, and half of the Iris keys', async (t) => {
  const wrongFlag = await ops('vendor:add', '--code', 'x2', '--kind', 'xendit', '--base-url', 'https://api.xendit.co', '--secret-key', 'xnd_development_abc123', '--callback-token', 'tok-12345678', '--server-key', 'SB-Mid-server-abc');
  t.not(wrongFlag.code, 0);
  t.match(wrongFlag.stderr, /server-key/);
  const missing = await ops('vendor:add', '--code', 'x3', '--kind', 'xendit', '--base-url', 'https://api.xendit.co', '--secret-key', 'xnd_development_abc123');
  t.not(missing.code, 0);
  t.match(missing.stderr, /--callback-token/);
  const halfIris = await ops('vendor:add', '--code', 'm2', '--kind', 'midtrans', '--base-url', 'https://api.sandbox.midtrans.com', '--server-key', 'SB-Mid-server-abc', '--iris-base-url', 'https://app.sandbox.midtrans.com/iris');
  t.not(halfIris.code, 0);
  t.match(halfIris.stderr, /Iris payouts need all four/);
  t.equal(await getVendor(pool, sealer, 'm2'), null, 'nothing saved');
});

t.test('a payout route to a Midtrans vendor without Iris keys is refused; with them it is set', async (t) => {
  await ops('vendor:add', '--sandbox', '--code', 'mid-noiris', '--kind', 'midtrans', '--base-url', 'https://api.sandbox.midtrans.com', '--server-key', 'SB-Mid-server-abc');
  const qris = await ops('route:set', '--method', 'QRIS', '--vendor', 'mid-noiris');
  t.equal(qris.code, 0, qris.stderr);
  for (const method of ['BANK', 'EWALLET']) {
    const refused = await ops('route:set', '--method', method, '--vendor', 'mid-noiris');
    t.equal(refused.code, 1);
    t.match(refused.stderr, /without Iris keys: it cannot pay out/);
  }
  await ops('vendor:add', '--sandbox', '--code', 'mid-iris', '--kind', 'midtrans', '--base-url', 'https://api.sandbox.midtrans.com', '--server-key', 'SB-Mid-server-abc',
    '--iris-base-url', 'https://app.sandbox.midtrans.com/iris', '--iris-creator-key', 'IRIS-creator-1', '--iris-approver-key', 'IRIS-approver-1', '--iris-merchant-key', 'IRIS-merchant-1');
  const bank = await ops('route:set', '--method', 'BANK', '--vendor', 'mid-iris');
  t.equal(bank.code, 0, bank.stderr);
});

t.test('vendor:check says OK for a reachable vendor with the right secret, and why not otherwise', async (t) => {
  const sim = await startSimulatorInProcess({ SIMULATOR_SECRET: 'check-secret-1' });
  t.teardown(() => sim.stop());
  await ops('vendor:add', '--code', 'simok', '--kind', 'simulator', '--base-url', sim.url, '--secret', 'check-secret-1');
  const ok = await ops('vendor:check', '--code', 'simok', '--json');
  t.equal(ok.code, 0, ok.stderr);
  t.match(JSON.parse(ok.stdout), { code: 'simok', kind: 'simulator', ok: true });

  await ops('vendor:add', '--code', 'simbad', '--kind', 'simulator', '--base-url', sim.url, '--secret', 'wrong-secret-2');
  const bad = await ops('vendor:check', '--code', 'simbad');
  t.equal(bad.code, 1);
  t.match(bad.stdout, /simbad \(simulator\): NOT OK — HTTP 401/);

  await ops('vendor:add', '--code', 'simdown', '--kind', 'simulator', '--base-url', 'http://127.0.0.1:1', '--secret', 'check-secret-1');
  const down = await ops('vendor:check', '--code', 'simdown', '--json');
  t.equal(down.code, 1);
  t.match(JSON.parse(down.stdout), { ok: false, detail: /ECONNREFUSED/ });

  const none = await ops('vendor:check', '--code', 'nope');
  t.equal(none.code, 1);
  t.match(none.stderr, /no vendor nope/);
});

t.test('vendor:add --kind snap reads the PEM files once, checks them, and seals them with the rest', async (t) => {
  const { generateKeyPairSync } = await import('node:crypto');
  const { writeFileSync, mkdtempSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const dir = mkdtempSync(`${tmpdir()}/kasir-snap-`);
  const ours = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const theirs = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const weak = generateKeyPairSync('rsa', { modulusLength: 1024 });
  writeFileSync(`${dir}/ours.pem`, ours.privateKey.export({ type: 'pkcs1', format: 'pem' }));
  writeFileSync(`${dir}/theirs.pub.pem`, theirs.publicKey.export({ type: 'spki', format: 'pem' }));
  writeFileSync(`${dir}/weak.pem`, weak.privateKey.export({ type: 'pkcs8', format: 'pem' }));
  const base = ['vendor:add', '--code', 'bank-snap', '--kind', 'snap', '--base-url', 'https://snap.example-bank.co.id', '--partner-id', 'KASIR01', '--client-key', 'client-123',
    '--client-secret', 'secret-abcdefgh', '--channel-id', '95221', '--merchant-id', 'MID001'];

  const ok = await ops(...base, '--private-key-file', `${dir}/ours.pem`, '--provider-public-key-file', `${dir}/theirs.pub.pem`, '--json');
  t.equal(ok.code, 0, ok.stderr);
  t.notMatch(ok.stdout + ok.stderr, /BEGIN|PRIVATE|secret-abcdefgh/, 'no key material printed');
  const creds = (await getVendor(pool, sealer, 'bank-snap'))!.credentials;
  t.match(creds, { partnerId: 'KASIR01', clientKey: 'client-123', clientSecret: 'secret-abcdefgh', channelId: '95221', merchantId: 'MID001', notifySignature: 'rsa' });
  t.equal(creds.qrQueryServiceCode, '47', 'the standard query service code by default');
  t.match(creds.privateKeyPem, /^-----BEGIN PRIVATE KEY-----/, 'stored as PKCS#8 whatever it came as');
  t.match(creds.providerPublicKeyPem, /^-----BEGIN PUBLIC KEY-----/);

  const swapped = await ops(...base, '--private-key-file', `${dir}/theirs.pub.pem`, '--provider-public-key-file', `${dir}/theirs.pub.pem`);
  t.equal(swapped.code, 1);
  t.match(swapped.stderr, /--private-key-file: .* is not a usable RSA private key/);
  const short = await ops(...base, '--private-key-file', `${dir}/weak.pem`, '--provider-public-key-file', `${dir}/theirs.pub.pem`);
  t.equal(short.code, 1);
  t.match(short.stderr, /1024-bit RSA key; SNAP needs 2048 bits or more/);
  const missing = await ops(...base, '--private-key-file', `${dir}/nope.pem`, '--provider-public-key-file', `${dir}/theirs.pub.pem`);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /cannot read .*nope\.pem \(ENOENT\)/);
});

t.test('jobs:list prints a header row above the jobs', async (t) => {
  const { startBoss, sendJob } = await import('../../db/queue.ts');
  const boss = await startBoss(databaseUrl, { role: 'sender', poolSize: 1 });
  t.teardown(() => boss.stop({ graceful: false }));
  const id = await sendJob(boss, 'ping', { sent_at: Date.now() });
  const res = await ops('jobs:list', '--queue', 'ping');
  t.equal(res.code, 0, res.stderr);
  const [header, first] = res.stdout.trim().split('\n');
  t.match(header, /^ID\s+QUEUE\s+STATE\s+RETRIES\s+CREATED\s+DATA$/);
  t.match(first, new RegExp(`^${id}\\s+ping\\s+created\\s+0\\s+\\d{4}-\\d{2}-\\d{2}T`));
});

t.test('vendor:add refuses a secret published with Kasir, unless ALLOW_DEVELOPMENT_SECRETS=true', async (t) => {
  const published = await ops('vendor:add', '--code', 'simpub', '--kind', 'simulator', '--base-url', 'http://127.0.0.1:4010', '--secret', 'sim-dev-secret');
  t.equal(published.code, 1);
  t.match(published.stderr, /secret: a development default published with Kasir/);
  t.equal(await getVendor(pool, sealer, 'simpub'), null, 'nothing saved');
  const dialect = await ops('vendor:add', '--sandbox', '--code', 'xndpub', '--kind', 'xendit', '--base-url', 'http://127.0.0.1:4010/xendit', '--secret-key', 'xnd_development_abc123',
    '--callback-token', 'kasir-simulator-xendit-callback-token');
  t.equal(dialect.code, 1);
  t.match(dialect.stderr, /callbackToken: a development default/, "a dialect's default token too");
  const allowed = await runOps({ ...env, ALLOW_DEVELOPMENT_SECRETS: 'true' }, 'vendor:add', '--code', 'simpub', '--kind', 'simulator', '--base-url', 'http://127.0.0.1:4010', '--secret', 'sim-dev-secret');
  t.equal(allowed.code, 0, allowed.stderr);
});

t.test('vendor:remove: refused while it holds money in flight (unless --force); routes go, credentials erased, not found again; vendor:add brings it back', async (t) => {
  const { randomUUID } = await import('node:crypto');
  await ops('vendor:add', '--code', 'gone', '--kind', 'simulator', '--base-url', 'http://127.0.0.1:4010', '--secret', 'gone-secret-123');
  t.equal((await ops('route:set', '--method', 'QRIS', '--vendor', 'gone')).code, 0);
  // An order waiting for a payer at it (written as the vendor worker leaves one: PENDING at the vendor).
  const merchant = await makeMerchant({ pool, sealer });
  await pool.query(sql.unsafe`
    insert into orders (id, merchant_id, ref_code, merchant_order_id, api, amount, status, qr_token, vendor_code)
    values (${randomUUID()}, ${merchant.merchant_id}, ${`ORD-GONE-${randomUUID()}`}, 'GONE-1', 'V1', 1000, 'PENDING', ${randomUUID()}, 'gone')`);
  const refused = await ops('vendor:remove', '--code', 'gone');
  t.equal(refused.code, 1);
  t.match(refused.stderr, /still holds 1 open orders/);
  t.ok(await getVendor(pool, sealer, 'gone'), 'not removed');
  const removed = await ops('vendor:remove', '--code', 'gone', '--force', '--json');
  t.equal(removed.code, 0, removed.stderr);
  t.match(JSON.parse(removed.stdout), { code: 'gone', removed: true });
  t.equal(await getVendor(pool, sealer, 'gone'), null, 'no longer found (nothing calls it, no callback verifies)');
  const stored = await pool.oneFirst(sql.type(z.object({ c: z.instanceof(Buffer) }))`select credentials_enc as c from vendors where code = 'gone'`);
  t.equal(sealer.open(stored, { table: 'vendors', column: 'credentials_enc', rowId: 'gone' }), '{}', 'credentials erased');
  t.notMatch((await ops('route:list')).stdout, /gone/, 'its routes are gone');
  t.match((await ops('vendor:list')).stdout, /gone\s+simulator\s+removed/);
  const route = await ops('route:set', '--method', 'QRIS', '--vendor', 'gone');
  t.equal(route.code, 1, 'nothing can be routed to it');
  t.match(route.stderr, /unknown vendor gone/);
  t.equal((await ops('vendor:remove', '--code', 'gone')).code, 1, 'removed once');
  t.equal((await ops('vendor:add', '--code', 'gone', '--kind', 'simulator', '--base-url', 'http://127.0.0.1:4010', '--secret', 'back-secret-123')).code, 0);
  t.equal((await getVendor(pool, sealer, 'gone'))?.credentials.secret, 'back-secret-123', 'vendor:add brings it back');
});

t.test('route:set for one merchant says the platform routes of that method stop applying to it, and when they apply again', async (t) => {
  await ops('vendor:add', '--sandbox', '--code', 'mid-own', '--kind', 'midtrans', '--base-url', 'https://api.sandbox.midtrans.com', '--server-key', 'SB-Mid-server-abc');
  const created = await ops('merchant:create', '--name', 'Toko Rute', '--settlement', 'WALLET', '--json');
  const merchant = JSON.parse(created.stdout).merchant_id as string;
  const set = await ops('route:set', '--method', 'QRIS', '--vendor', 'mid-own', '--merchant', merchant);
  t.equal(set.code, 0, set.stderr);
  t.match(set.stdout, `Merchant ${merchant} now uses only its own QRIS routes: the platform's QRIS routes no longer apply to it`);
  const json = await ops('route:set', '--method', 'QRIS', '--vendor', 'mid-own', '--merchant', merchant, '--priority', '5', '--json');
  t.match(JSON.parse(json.stdout), { merchantId: merchant, replaces_platform_routes: true });
  const platform = await ops('route:set', '--method', 'QRIS', '--vendor', 'mid-own');
  t.notMatch(platform.stdout, /no longer apply/, 'a platform route says nothing of the kind');
  const removed = await ops('route:set', '--method', 'QRIS', '--vendor', 'mid-own', '--merchant', merchant, '--remove');
  t.match(removed.stdout, `Merchant ${merchant} has no QRIS route of its own left: the platform's QRIS routes apply to it again`);
});

t.test('ops messages: a malformed --ref says what a ref_code looks like; a missing flag is named, not zod\'s text', async (t) => {
  const ref = await ops('simulate:pay', '--ref', 'ORD-nope');
  t.equal(ref.code, 64);
  t.match(ref.stderr, /error: --ref must be an order's ref_code as POST \/v1\/orders answered it: ORD-<digits>-<capital letters and digits>, e\.g\. ORD-/);
  const noEvent = await ops('webhooks:trigger', '--merchant', '3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90');
  t.equal(noEvent.code, 64);
  t.match(noEvent.stderr, /error: --event is required: one of order\.paid, /);
  t.notMatch(noEvent.stderr, /Invalid input|received undefined/, 'no raw zod text');
  const noRef = await ops('simulate:pay');
  t.match(noRef.stderr, /--ref is required/);
  const noVendor = await ops('route:set', '--method', 'QRIS');
  t.match(noVendor.stderr, /error: --vendor is required\n/, 'a flag without its own message is named as required');
});

t.test('vendor:remove counts orders that expired recently: their payments may still be reported', async (t) => {
  const { randomUUID } = await import('node:crypto');
  await ops('vendor:add', '--code', 'late', '--kind', 'simulator', '--base-url', 'http://127.0.0.1:4010', '--secret', 'late-secret-123');
  const merchant = await makeMerchant({ pool, sealer });
  const expired = (id: string, hoursAgo: number) => pool.query(sql.unsafe`
    insert into orders (id, merchant_id, ref_code, merchant_order_id, api, amount, status, qr_token, vendor_code, expires_at)
    values (${id}, ${merchant.merchant_id}, ${`ORD-LATE-${id}`}, ${`LATE-${id}`}, 'V1', 1000, 'EXPIRED', ${randomUUID()}, 'late',
            now() - make_interval(hours => ${hoursAgo}))`);
  const old = randomUUID();
  await expired(old, 24 * 3);
  const recent = randomUUID();
  await expired(recent, 1);
  const refused = await ops('vendor:remove', '--code', 'late');
  t.equal(refused.code, 1);
  t.match(refused.stderr, /still holds 0 open orders, 1 orders expired in the last 48 hours \(their payments may still be reported\)/, 'the one expired an hour ago, not the one three days ago');
  t.ok(await getVendor(pool, sealer, 'late'), 'not removed');
  await pool.query(sql.unsafe`update orders set expires_at = now() - interval '49 hours' where id = ${recent}`);
  const removed = await ops('vendor:remove', '--code', 'late', '--json');
  t.equal(removed.code, 0, removed.stderr);
  t.match(JSON.parse(removed.stdout), { removed: true, in_flight: { orders: 0, expired_orders: 0 } });
});

t.test('vendor:remove and a record handed to the vendor meanwhile: counted, never removed under it', async (t) => {
  const { randomUUID } = await import('node:crypto');
  await ops('vendor:add', '--code', 'race', '--kind', 'simulator', '--base-url', 'http://127.0.0.1:4010', '--secret', 'race-secret-123');
  const merchant = await makeMerchant({ pool, sealer });
  const id = randomUUID();
  await pool.query(sql.unsafe`
    insert into orders (id, merchant_id, ref_code, merchant_order_id, api, amount, status, qr_token)
    values (${id}, ${merchant.merchant_id}, ${`ORD-RACE-${id}`}, ${`RACE-${id}`}, 'V1', 1000, 'CREATING', ${randomUUID()})`);
  // The vendor worker marks the attempt pending at `race` (as markVendorPending does) and has not
  // committed when the operator removes the vendor. Its own connection: a plain client.
  const worker = new pg.Client({ connectionString: databaseUrl });
  await worker.connect();
  t.teardown(() => worker.end());
  await worker.query('begin');
  await worker.query(`update orders set pending_vendor = 'race', vendors_tried = array_append(vendors_tried, 'race') where id = $1`, [id]);
  const removal = ops('vendor:remove', '--code', 'race');
  const waiting = eventually(async () => {
    const n = (await pool.oneFirst(sql.unsafe`select count(*)::int from pg_stat_activity where wait_event_type = 'Lock' and query ilike '%from vendors%'`)) as number;
    return n > 0 ? ('waiting' as const) : undefined;
  }, 'vendor:remove waiting for the worker’s transaction', 30_000);
  t.equal(await Promise.race([removal.then(() => 'finished'), waiting]), 'waiting', 'vendor:remove waits for the transaction handing the vendor a record');
  await worker.query('commit');
  const refused = await removal;
  t.equal(refused.code, 1, 'then counts it and refuses');
  t.match(refused.stderr, /still holds 1 open orders/);
  t.ok(await getVendor(pool, sealer, 'race'), 'not removed');
});
