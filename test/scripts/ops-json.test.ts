// `--json` is one JSON object on stdout, whatever the command and whatever it logs: the logs go
// to stderr (scripts/ops/logs-to-stderr.ts). Run at LOG_LEVEL=info, what an operator has by
// default, so a log line on stdout would break JSON.parse. And a database that cannot be
// reached is one line naming DATABASE_URL and `npm start`, for ops commands and npm start alike.
import t from 'tap';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { wibDay } from '../../db/recon.ts';
import { freePort } from '../../scripts/lib/cluster.ts';
import { newMasterKey } from '../../db/secrets.ts';
import { testEnv } from '../helpers/config.ts';
import { testDatabase } from '../helpers/db.ts';
import { ops as runOps } from '../helpers/processes.ts';
import { startSimulatorInProcess } from '../helpers/simulator.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const databaseUrl = await testDatabase(t);
const env = testEnv(databaseUrl, { LOG_LEVEL: 'info' });
const ops = (...args: string[]) => runOps(env, ...args);
const SECRET = 'a-test-secret-of-its-own-0123456789';
const sim = await startSimulatorInProcess({ SIMULATOR_SECRET: SECRET });
t.teardown(() => sim.stop());

t.test('every command, answer or refusal, prints exactly one JSON object with --json', async (t) => {
  const added = await ops('vendor:add', '--code', 'simj', '--kind', 'simulator', '--base-url', sim.url, '--secret', SECRET, '--json');
  const merchant = await ops('merchant:create', '--name', 'Toko Json', '--settlement', 'WALLET', '--json');
  const id = JSON.parse(merchant.stdout).merchant_id as string;
  const runs = [
    added,
    merchant,
    await ops('recon:run', '--vendor', 'simj', '--date', wibDay(new Date()), '--json'),
    await ops('recon:show', '--vendor', 'simj', '--json'),
    await ops('ledger:audit', '--json'),
    await ops('unresolved:list', '--json'),
    await ops('vendor:list', '--json'),
    await ops('merchant:set-status', '--merchant', id, '--status', 'SUSPENDED', '--json'),
    // Refusals: a usage error, an unknown merchant, an unknown vendor.
    await ops('merchant:create', '--name', 'X', '--settlement', 'CASH', '--json'),
    await ops('merchant:set-status', '--merchant', '00000000-0000-4000-8000-000000000000', '--status', 'ACTIVE', '--json'),
    await ops('recon:run', '--vendor', 'nope', '--date', '2026-11-01', '--json'),
  ];
  for (const run of runs) {
    t.doesNotThrow(() => JSON.parse(run.stdout), `one JSON object: ${run.stdout.slice(0, 300)}`);
    t.equal(run.stdout.trim().split('\n').length, 1, 'on one line, nothing else on stdout');
  }
  t.match(JSON.parse(runs[2].stdout), { run: { vendor_code: 'simj', status: 'COMPLETED' } }, 'recon:run answered');
  t.match(runs[2].stderr, /reconciliation/, 'and its log went to stderr');
  t.match(JSON.parse(runs[10].stdout), { error: /no vendor nope/ });
});

t.test('a database that cannot be reached is one line naming DATABASE_URL and npm start', async (t) => {
  const deadUrl = `postgres://kasir:kasir@127.0.0.1:${await freePort()}/kasir`;
  const dead = { ...env, DATABASE_URL: deadUrl };
  const text = await runOps(dead, 'unresolved:list');
  t.equal(text.code, 1);
  t.equal(text.stdout, '');
  t.equal(text.stderr.trim().split('\n').length, 1, `one line: ${text.stderr}`);
  t.match(text.stderr, /^error: cannot reach the database at 127\.0\.0\.1:\d+ \(ECONNREFUSED\): check DATABASE_URL.*`npm start`/);
  t.notMatch(text.stderr, /\n\s+at /, 'no stack trace');

  const json = await runOps(dead, 'ledger:audit', '--json');
  t.equal(json.code, 1);
  t.match(JSON.parse(json.stdout), { error: /cannot reach the database.*DATABASE_URL/ });
  t.equal(json.stderr, '', 'nothing else');

  // npm start with a DATABASE_URL where nothing listens.
  const start = await promisify(execFile)(process.execPath, [`${ROOT}scripts/dev.ts`], {
    cwd: ROOT,
    env: { ...process.env, ...dead, KASIR_MASTER_KEY: newMasterKey() },
  }).then(() => null, (err: { code: number; stdout: string; stderr: string }) => err);
  t.ok(start, 'npm start exits non-zero');
  t.equal(start!.code, 1);
  t.equal(start!.stderr.trim().split('\n').length, 1, `one line: ${start!.stderr}`);
  t.match(start!.stderr, /^cannot reach the database at 127\.0\.0\.1:\d+ \(ECONNREFUSED\): check DATABASE_URL.*`npm start`/);
});
