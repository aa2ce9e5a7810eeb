import t from 'tap';
import { call, eventually } from '../helpers/http.ts';
import { startApi } from '../helpers/api.ts';
import { testConfig } from '../helpers/config.ts';
import { testDatabase } from '../helpers/db.ts';
import { makeBrand } from '../helpers/factories.ts';
import pg from 'pg';

const config = testConfig(await testDatabase(t));
const api = await startApi(t, config);

t.test('GET /v1/brand resolves the brand from the Host header', async (t) => {
  const brand = await makeBrand(api.ctx, 'pay.tokobagus.test');
  const res = await call(api.url, { path: '/v1/brand', headers: { host: 'PAY.tokobagus.test:8443' } });
  t.equal(res.status, 200);
  t.same(res.json, {
    success: true,
    data: { name: brand.name, domain: 'pay.tokobagus.test', logo_url: brand.logo_url, support_email: brand.support_email },
  });
});

t.test('an unknown host gets the default brand', async (t) => {
  const res = await call(api.url, { path: '/v1/brand', headers: { host: 'unknown.example' } });
  t.equal(res.status, 200);
  t.equal(res.json.data.name, 'Kasir');
  t.equal(res.json.data.domain, 'localhost');
});

t.test('healthz reports the database', async (t) => {
  const res = await call(api.url, { path: '/healthz' });
  t.equal(res.status, 200);
  t.same(res.json, { status: 'ok', db: 'ok' });
});

t.test('healthz is 503 when the database is unreachable, and recovers', async (t) => {
  const database = new URL(config.DATABASE_URL).pathname.slice(1);
  const admin = new pg.Client({ connectionString: process.env.KASIR_TEST_ADMIN_URL });
  await admin.connect();
  t.teardown(() => admin.end());
  // Refuse new connections and cut the existing ones: the API's pool can no longer reach it.
  await admin.query(`alter database "${database}" with allow_connections false`);
  await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1', [database]);
  const down = await call(api.url, { path: '/healthz' });
  t.equal(down.status, 503);
  t.same(down.json, { status: 'unavailable', db: 'unreachable' });

  await admin.query(`alter database "${database}" with allow_connections true`);
  const up = await eventually(async () => {
    const res = await call(api.url, { path: '/healthz' });
    return res.status === 200 ? res : undefined;
  }, 'healthz to recover');
  t.same(up.json, { status: 'ok', db: 'ok' });
});
