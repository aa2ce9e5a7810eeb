// The least-privilege role of docs/app-role.sql (issue 21, item 6): the API, a worker group
// and the ops CLI run with it, and it cannot change the schema.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import t from 'tap';
import { startApi } from '../helpers/api.ts';
import { testConfig, testEnv } from '../helpers/config.ts';
import { testDatabase } from '../helpers/db.ts';
import { call } from '../helpers/http.ts';
import { ops, startWorkerGroup } from '../helpers/processes.ts';

const ownerUrl = await testDatabase(t);
// Roles are cluster-wide: a name of this file's own, dropped with the database at the end.
const role = `kasir_app_${randomBytes(4).toString('hex')}`;
const password = randomBytes(12).toString('hex');
const database = new URL(ownerUrl).pathname.slice(1);

async function asOwner(text: string, url = ownerUrl) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

await asOwner(`create role ${role} login password '${password}'`);
t.teardown(async () => {
  const admin = new URL(ownerUrl);
  admin.pathname = '/postgres';
  await asOwner(`drop database if exists "${database}" with (force)`, admin.toString());
  await asOwner(`drop role if exists ${role}`, admin.toString());
});
await asOwner(readFileSync(new URL('../../docs/app-role.sql', import.meta.url), 'utf8').replaceAll('kasir_app', role));

const appUrl = new URL(ownerUrl);
appUrl.username = role;
appUrl.password = password;
const env = testEnv(appUrl.toString());

t.test('the ops CLI, the API and a worker group run as the app role', async (t) => {
  const created = await ops(env, 'merchant:create', '--name', 'Toko Peran', '--settlement', 'WALLET', '--generate-webhook-secret', '--json');
  t.equal(created.code, 0, created.stderr);
  const m = JSON.parse(created.stdout);
  const api = await startApi(t, testConfig(appUrl.toString()));
  t.equal((await call(api.url, { path: '/v1/probe', headers: { 'x-api-key': m.api_key } })).status, 404, 'authenticated');
  const balance = await call(api.url, { path: '/v1/balance', headers: { 'x-api-key': m.api_key } });
  t.equal(balance.status, 200, balance.text);
  const rotated = await ops(env, 'merchant:rotate-key', '--merchant', m.merchant_id, '--grace-minutes', '1', '--json');
  t.equal(rotated.code, 0, rotated.stderr);
  t.equal((await ops(env, 'secrets:reseal')).code, 0);
  const scheduler = await startWorkerGroup(t, 'scheduler', env);
  t.ok(scheduler.message, 'the scheduler group started (pg-boss with supervision and cron)');
  await scheduler.stop();
});

t.test('the app role cannot change the schema or the migration record', async (t) => {
  const client = new pg.Client({ connectionString: appUrl.toString() });
  await client.connect();
  t.teardown(() => client.end());
  for (const statement of [
    'create table intruder (id int)',
    'alter table merchants add column intruder text',
    'drop table vendors',
    'create table pgboss.intruder (id int)',
    'delete from kasir_migrations',
  ]) {
    await t.rejects(client.query(statement), { message: /permission denied|must be owner/ }, statement);
  }
});
