import t from 'tap';
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { call } from '../helpers/http.ts';
import { startApi } from '../helpers/api.ts';
import { testConfig, testEnv } from '../helpers/config.ts';
import { testDatabase } from '../helpers/db.ts';
import { getMerchant } from '../../db/merchants.ts';
import { sql } from '../../db/pool.ts';
import { ops as runOps, opsWithStdin, startWorkerGroup } from '../helpers/processes.ts';

const databaseUrl = await testDatabase(t);
const env = testEnv(databaseUrl);
const api = await startApi(t, testConfig(databaseUrl));

const ops = (...args: string[]) => runOps(env, ...args);

t.test('merchant:create prints credentials; the printed key authenticates', async (t) => {
  const res = await ops('merchant:create', '--name', 'Toko Ops', '--settlement', 'WALLET', '--generate-webhook-secret', '--json');
  t.equal(res.code, 0, res.stderr);
  const out = JSON.parse(res.stdout);
  t.match(out, { merchant_id: /^[0-9a-f-]{36}$/, api_key: /^[0-9a-f]{64}$/, webhook_secret: /^whsec_/, legacy_client_id: String, legacy_client_secret: String });
  const authed = await call(api.url, { path: '/v1/probe', headers: { 'x-api-key': out.api_key } });
  t.equal(authed.status, 404, 'past authentication');
  const row = await getMerchant(api.ctx.pool, out.merchant_id);
  t.notOk(row.api_key_hash.toString('hex').includes(out.api_key), 'only the digest is stored');
  t.notOk(row.webhook_secret_enc!.toString('utf8').includes(out.webhook_secret.slice(6)), 'webhook secret is sealed');
});

t.test('merchant:create without a secret prints webhook_secret null', async (t) => {
  const res = await ops('merchant:create', '--name', 'Toko Tanpa', '--settlement', 'MANUAL', '--json');
  t.equal(res.code, 0);
  t.equal(JSON.parse(res.stdout).webhook_secret, null);
});

t.test('bad input exits non-zero naming the flag', async (t) => {
  const bad = await ops('merchant:create', '--name', 'X', '--settlement', 'CASH');
  t.not(bad.code, 0);
  t.match(bad.stderr, /--settlement/);
  const unknown = await ops('merchant:create', '--nme', 'X');
  t.not(unknown.code, 0);
  t.match(unknown.stderr, /nme/);
  const missing = await ops('merchant:set-status', '--merchant', '00000000-0000-4000-8000-000000000000', '--status', 'ACTIVE', '--json');
  t.equal(missing.code, 1);
  t.match(JSON.parse(missing.stdout).error, /no merchant/);
});

t.test('set-status, rotate-key and brand domains act on the live API', async (t) => {
  const created = JSON.parse((await ops('merchant:create', '--name', 'Toko Rot', '--settlement', 'WALLET', '--json')).stdout);
  const suspend = await ops('merchant:set-status', '--merchant', created.merchant_id, '--status', 'SUSPENDED');
  t.equal(suspend.code, 0);
  t.equal((await call(api.url, { path: '/v1/probe', headers: { 'x-api-key': created.api_key } })).status, 403);
  await ops('merchant:set-status', '--merchant', created.merchant_id, '--status', 'ACTIVE');
  const rotated = JSON.parse((await ops('merchant:rotate-key', '--merchant', created.merchant_id, '--json')).stdout);
  t.not(rotated.api_key, created.api_key);
  t.equal((await call(api.url, { path: '/v1/probe', headers: { 'x-api-key': created.api_key } })).status, 401, 'old key dead');
  t.equal((await call(api.url, { path: '/v1/probe', headers: { 'x-api-key': rotated.api_key } })).status, 404, 'new key works');

  t.equal((await ops('brand:create', '--domain', 'pay.ops.test', '--name', 'Ops Pay')).code, 0);
  const branded = JSON.parse((await ops('merchant:create', '--name', 'B', '--settlement', 'WALLET', '--brand-domain', 'pay.ops.test', '--json')).stdout);
  const res = await call(api.url, { path: '/v1/probe', headers: { 'x-api-key': branded.api_key, host: 'pay.ops.test' } });
  t.equal(res.status, 404);
});

t.test('merchant:set-notify-url sets and clears the default webhook URL, by the rules an order URL meets', async (t) => {
  const created = JSON.parse((await ops('merchant:create', '--name', 'Toko Hook', '--settlement', 'WALLET', '--json')).stdout);
  const id = created.merchant_id;
  const set = await ops('merchant:set-notify-url', '--merchant', id, '--url', 'https://hooks.example.co.id/kasir', '--json');
  t.equal(set.code, 0, set.stderr);
  t.same(JSON.parse(set.stdout), { merchant_id: id, notify_url: 'https://hooks.example.co.id/kasir' });
  t.equal((await getMerchant(api.ctx.pool, id)).notify_url, 'https://hooks.example.co.id/kasir', 'stored');

  const local = await ops('merchant:set-notify-url', '--merchant', id, '--url', 'http://127.0.0.1:8080/hooks');
  t.equal(local.code, 0, `an allowlisted host (NOTIFY_URL_ALLOWLIST): ${local.stderr}`);
  const privateUrl = await ops('merchant:set-notify-url', '--merchant', id, '--url', 'http://10.1.2.3/hooks');
  t.equal(privateUrl.code, 1, 'a private address is refused');
  t.match(privateUrl.stderr, /--url/);
  const notHttp = await ops('merchant:set-notify-url', '--merchant', id, '--url', 'ftp://hooks.example.co.id/');
  t.equal(notHttp.code, 64, 'only http(s): a usage error');
  const neither = await ops('merchant:set-notify-url', '--merchant', id);
  t.equal(neither.code, 64, 'a usage error');
  t.match(neither.stderr, /--url URL or --clear/);
  t.equal((await getMerchant(api.ctx.pool, id)).notify_url, 'http://127.0.0.1:8080/hooks', 'refusals changed nothing');

  const cleared = await ops('merchant:set-notify-url', '--merchant', id, '--clear', '--json');
  t.equal(cleared.code, 0, cleared.stderr);
  t.equal((await getMerchant(api.ctx.pool, id)).notify_url, null, 'cleared');
  const unknown = await ops('merchant:set-notify-url', '--merchant', '00000000-0000-4000-8000-000000000000', '--clear');
  t.equal(unknown.code, 1, 'an unknown merchant');
});

t.test('merchant:create --notify-url meets the same rules: a private address is refused and nothing is created', async (t) => {
  const count = async () => Number(await api.ctx.pool.oneFirst(sql.unsafe`select count(*) from merchants`));
  const before = await count();
  for (const url of ['http://10.1.2.3/hooks', 'http://169.254.169.254/latest/meta-data/', 'http://[::ffff:7f00:1]/hooks', 'http://intranet./hooks']) {
    const refused = await runOps({ ...env, NOTIFY_URL_ALLOWLIST: '' }, 'merchant:create', '--name', 'Toko SSRF', '--settlement', 'WALLET', '--notify-url', url);
    t.equal(refused.code, 1, `${url} refused`);
    t.match(refused.stderr, /--notify-url/);
  }
  t.equal(await count(), before, 'no merchant was created');
  const ok = await ops('merchant:create', '--name', 'Toko Hook 2', '--settlement', 'WALLET', '--notify-url', 'https://hooks.example.co.id/kasir', '--json');
  t.equal(ok.code, 0, ok.stderr);
  t.equal((await getMerchant(api.ctx.pool, JSON.parse(ok.stdout).merchant_id)).notify_url, 'https://hooks.example.co.id/kasir');
});

t.test('merchant:set-public-key accepts an RSA PEM and refuses anything else', async (t) => {
  const created = JSON.parse((await ops('merchant:create', '--name', 'Legacy', '--settlement', 'WALLET', '--json')).stdout);
  const dir = t.testdir({});
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' });
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ type: 'spki', format: 'pem' });
  writeFileSync(`${dir}/rsa.pem`, rsa);
  writeFileSync(`${dir}/ec.pem`, ec);
  writeFileSync(`${dir}/junk.pem`, 'hello');
  t.equal((await ops('merchant:set-public-key', '--merchant', created.merchant_id, '--file', `${dir}/rsa.pem`)).code, 0);
  t.match((await getMerchant(api.ctx.pool, created.merchant_id)).legacy_public_key, /BEGIN PUBLIC KEY/);
  const ecRes = await ops('merchant:set-public-key', '--merchant', created.merchant_id, '--file', `${dir}/ec.pem`);
  t.equal(ecRes.code, 1);
  t.match(ecRes.stderr, /RSA key is required/);
  t.equal((await ops('merchant:set-public-key', '--merchant', created.merchant_id, '--file', `${dir}/junk.pem`)).code, 1);

  const stored = (await getMerchant(api.ctx.pool, created.merchant_id)).legacy_public_key;
  for (const bits of [512, 1024]) {
    writeFileSync(`${dir}/rsa${bits}.pem`, generateKeyPairSync('rsa', { modulusLength: bits }).publicKey.export({ type: 'pkcs1', format: 'pem' }));
    const weak = await ops('merchant:set-public-key', '--merchant', created.merchant_id, '--file', `${dir}/rsa${bits}.pem`, '--json');
    t.equal(weak.code, 1, `a ${bits}-bit RSA key is refused`);
    t.match(JSON.parse(weak.stdout).error, `is a ${bits}-bit RSA key; an RSA key of at least 2048 bits is required`);
  }
  t.equal((await getMerchant(api.ctx.pool, created.merchant_id)).legacy_public_key, stored, 'the stored key is unchanged');
});

t.test('a queued job reaches a worker process, and jobs:list/rerun see jobs', async (t) => {
  await startWorkerGroup(t, 'scheduler', env);
  const ping = await ops('jobs:ping', '--json');
  t.equal(ping.code, 0, ping.stderr);
  const out = JSON.parse(ping.stdout);
  t.ok(out.pickup_ms >= 0 && out.pickup_ms < 2000, `picked up in ${out.pickup_ms} ms, well under a polling interval`);
  t.not(out.worker_pid, process.pid, 'by another process');
  const listed = JSON.parse((await ops('jobs:list', '--queue', 'ping', '--json')).stdout);
  t.ok(listed.jobs.some((j: { id: string; state: string }) => j.id === out.job_id && j.state === 'completed'));
  const rerunCompleted = await ops('jobs:rerun', '--id', out.job_id);
  t.equal(rerunCompleted.code, 1, 'a completed job is not rerun');
  t.match(rerunCompleted.stderr, /only failed/);

  // Many ids in one call, from the arguments and from standard input: each is judged on its own.
  const unknown = '00000000-0000-4000-8000-000000000000';
  const many = await opsWithStdin(env, `${unknown}\n`, 'jobs:rerun', '--id', out.job_id, '--stdin', '--json');
  t.equal(many.code, 1, 'a call with jobs it could not rerun exits 1');
  t.same(JSON.parse(many.stdout), {
    rerun: [],
    skipped: [
      { id: out.job_id, reason: `job ${out.job_id} is completed; only failed or cancelled jobs can be rerun` },
      { id: unknown, reason: `no job with id ${unknown}` },
    ],
  });
});
