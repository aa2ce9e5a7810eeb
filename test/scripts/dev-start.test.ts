// npm start (scripts/dev.ts) and the simulator's vendor registration: the simulator is
// registered only in a database that belongs to the stack, with a random secret of its own kept
// sealed in its vendor row (a published one is replaced), read back with every configured
// master key, and an operator's vendor:remove stays done. The whole stack runs here as npm
// start runs it, every Procfile line a process, against a test database.
import t from 'tap';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../scripts/lib/cluster.ts';
import { ensureSimulatorVendor } from '../../scripts/lib/simulator-vendor.ts';
import { newMasterKey, createSealer } from '../../db/secrets.ts';
import { createPool, poolReader } from '../../db/pool.ts';
import { PUBLISHED_SECRETS } from '../../db/published-secrets.ts';
import { listRoutes, listVendors } from '../../db/operator-lists.ts';
import { getVendor, removeVendor, upsertVendor } from '../../db/vendors.ts';
import { testEnv } from '../helpers/config.ts';
import { testDatabase } from '../helpers/db.ts';
import { ops } from '../helpers/processes.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const keys = (current: string, previous: string[] = []) => ({ KASIR_MASTER_KEY: current, KASIR_MASTER_KEYS_PREVIOUS: previous, KASIR_SEALED_REQUIRE_BOUND: false });

t.test('the registration: random, kept, a published one replaced, read with previous keys, removal respected', async (t) => {
  const databaseUrl = await testDatabase(t);
  const pool = await createPool(databaseUrl, { size: 1, name: 'test' });
  t.teardown(() => pool.end());
  const [a, b] = [newMasterKey(), newMasterKey()];

  const first = await ensureSimulatorVendor(databaseUrl, keys(a), 'http://127.0.0.1:4010');
  t.equal(first.action, 'registered');
  t.notOk(PUBLISHED_SECRETS.has(first.secret), 'not a published secret');
  t.ok(first.secret.length >= 32, 'a long random one');
  t.equal((await getVendor(pool, createSealer(a), 'sim'))?.credentials.secret, first.secret, 'sealed in the vendor row');
  t.same((await listRoutes(poolReader(pool))).map((r) => r.method).sort(), ['BANK', 'EWALLET', 'QRIS'], 'routed as the default for every method');

  const again = await ensureSimulatorVendor(databaseUrl, keys(a), 'http://127.0.0.1:4010');
  t.same(again, { secret: first.secret, action: 'kept' }, 'the next start reads the same secret back');

  // After a master-key rotation the row is under the previous key: it still opens.
  const rotatedKeys = await ensureSimulatorVendor(databaseUrl, keys(b, [a]), 'http://127.0.0.1:4010');
  t.same(rotatedKeys, { secret: first.secret, action: 'kept' }, 'opened with KASIR_MASTER_KEYS_PREVIOUS');

  // An installation registered before: the published secret is replaced.
  await upsertVendor(pool, createSealer(a), { code: 'sim', kind: 'simulator', baseUrl: 'http://127.0.0.1:4010', credentials: { secret: 'sim-dev-secret' } });
  const replaced = await ensureSimulatorVendor(databaseUrl, keys(b, [a]), 'http://127.0.0.1:4010');
  t.equal(replaced.action, 'rotated');
  t.notOk(PUBLISHED_SECRETS.has(replaced.secret));
  t.equal((await getVendor(pool, createSealer(keys(b, [a])), 'sim'))?.credentials.secret, replaced.secret);

  await removeVendor(pool, createSealer(keys(b, [a])), 'sim');
  const removed = await ensureSimulatorVendor(databaseUrl, keys(b, [a]), 'http://127.0.0.1:4010');
  t.equal(removed.action, 'removed', 'an operator removed it: not brought back');
  t.equal(await getVendor(pool, createSealer(keys(b, [a])), 'sim'), null);
});

/** `node scripts/dev.ts` until it says Kasir is running (then `during`, then SIGTERM) or exits; its output. */
async function npmStart(env: Record<string, string>, during: () => Promise<void> = async () => {}): Promise<{ running: boolean; output: string; code: number | null }> {
  const child = spawn(process.execPath, [`${ROOT}scripts/dev.ts`], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const running = await Promise.race([
    new Promise<boolean>((resolve) =>
      createInterface({ input: child.stdout! }).on('line', (line) => {
        output += `${line}\n`;
        if (line.startsWith('Kasir is running at')) resolve(true);
      }),
    ),
    exited.then(() => false),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 60_000).unref()),
  ]);
  try {
    if (running) await during();
  } finally {
    child.kill('SIGTERM');
  }
  return { running, output, code: await exited };
}

t.test('npm start against a database it was given', async (t) => {
  const databaseUrl = await testDatabase(t);
  const pool = await createPool(databaseUrl, { size: 1, name: 'test' });
  t.teardown(() => pool.end());
  const stateDir = mkdtempSync(`${tmpdir()}/kasir-dev-start-`);
  const [old, current] = [newMasterKey(), newMasterKey()];
  const base = async () => ({
    ...testEnv(databaseUrl, { PORT: String(await freePort()), LOG_LEVEL: 'warn' }),
    SIMULATOR_PORT: String(await freePort()),
    SIMULATOR_STATE_FILE: `${stateDir}/simulator-state.jsonl`,
  });

  t.test('registers no simulator there unless told the database is the stack’s own', async (t) => {
    const run = await npmStart({ ...(await base()), KASIR_MASTER_KEY: current });
    t.ok(run.running, 'the stack runs', { output: run.running ? undefined : run.output });
    t.match(run.output, /the simulator is not registered as a vendor there/);
    t.same(await listVendors(poolReader(pool)), [], 'no vendor in a database npm start was only given');
  });

  t.test('told so, it replaces a published secret, with the key rotated (KASIR_MASTER_KEYS_PREVIOUS)', async (t) => {
    // Registered by an older npm start under the old key, with the published secret.
    await upsertVendor(pool, createSealer(old), { code: 'sim', kind: 'simulator', baseUrl: 'http://127.0.0.1:1', credentials: { secret: 'sim-dev-secret' } });
    const env = { ...(await base()), KASIR_MASTER_KEY: current, KASIR_MASTER_KEYS_PREVIOUS: old, DEV_REGISTER_SIMULATOR: 'true' };
    let checked = { code: -1, stdout: '', stderr: '' };
    const run = await npmStart(env, async () => {
      // The simulator npm start runs takes the secret now in the vendor row: a signed query proves it.
      checked = await ops(env, 'vendor:check', '--code', 'sim');
    });
    t.ok(run.running, 'the stack runs: the web process did not refuse it', { output: run.running ? undefined : run.output });
    t.match(run.output, /gave the built-in simulator vendor a new secret/);
    const sim = await getVendor(pool, createSealer(keys(current, [old])), 'sim');
    t.ok(sim && !PUBLISHED_SECRETS.has(sim.credentials.secret), 'the vendor holds a secret of its own now');
    t.equal(sim?.baseUrl, `http://127.0.0.1:${env.SIMULATOR_PORT}`, 'registered where the simulator runs');
    t.notMatch(run.output, new RegExp(sim!.credentials.secret), 'the secret is printed nowhere');
    t.equal(checked.code, 0, `vendor:check: ${checked.stdout}${checked.stderr}`);
    const again = await npmStart(env);
    t.ok(again.running);
    t.notMatch(again.output, /new secret/, 'the next start keeps it');
    t.equal((await getVendor(pool, createSealer(keys(current, [old])), 'sim'))?.credentials.secret, sim!.credentials.secret);
  });
});
