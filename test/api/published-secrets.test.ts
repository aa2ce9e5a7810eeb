// Secrets published with Kasir (the simulator's defaults) are never a vendor's: the list covers
// every default the simulator ships, the web process refuses to start while a vendor holds one
// (unless ALLOW_DEVELOPMENT_SECRETS=true), and it names a listener beyond loopback without
// TRUST_PROXY at start. The web process here is the real entry, api/server.ts.
import t from 'tap';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { createPool } from '../../db/pool.ts';
import { configSchema } from '../../db/config.ts';
import { publishedCredentials } from '../../db/published-secrets.ts';
import { createSealer } from '../../db/secrets.ts';
import { removeVendor, upsertVendor } from '../../db/vendors.ts';
import { loadSimulatorConfig } from '../../gateways/simulator/config.ts';
import { testEnv } from '../helpers/config.ts';
import { testDatabase } from '../helpers/db.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const databaseUrl = await testDatabase(t);
const pool = await createPool(databaseUrl, { size: 1, name: 'test' });
t.teardown(() => pool.end());
const env = testEnv(databaseUrl, { LOG_LEVEL: 'info' });
const sealer = createSealer(env.KASIR_MASTER_KEY);

/** Runs api/server.ts until it listens (then stops it) or exits; its output and how it ended. */
async function startWeb(extra: Record<string, string> = {}): Promise<{ listened: boolean; code: number | null; output: string }> {
  const child = spawn(process.execPath, [`${ROOT}api/server.ts`], { cwd: ROOT, env: { ...process.env, ...env, ...extra }, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const listened = await Promise.race([once(child, 'message').then(() => true), exited.then(() => false)]);
  if (listened) child.kill('SIGTERM');
  return { listened, code: await exited, output };
}

/** A setting or field whose name says it holds a credential. */
const CREDENTIAL_NAME = /secret|key|token|password/i;

/** Every string default a zod schema gives, through its wrappers (optional, pipe, preprocess, ...). */
function stringDefaults(schema: unknown): string[] {
  const def = (schema as { def?: Record<string, unknown> } | undefined)?.def;
  if (!def) return [];
  const own = (def.type === 'default' || def.type === 'prefault') && typeof def.defaultValue === 'string' ? [def.defaultValue] : [];
  return [...own, ...['innerType', 'in', 'out', 'schema'].flatMap((inner) => stringDefaults(def[inner]))];
}

/** Every string field of a loaded configuration, by its path. */
function stringFields(value: unknown, path: string[] = []): Array<[string, string]> {
  if (typeof value === 'string') return [[path.join('.'), value]];
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([name, inner]) => stringFields(inner, [...path, name]));
}

t.test('every credential default Kasir and the simulator ship is refused as a published secret', async (t) => {
  // Kasir's own settings: each default of a setting named like a credential.
  const kasir = Object.entries(configSchema.shape).flatMap(([name, schema]) => (CREDENTIAL_NAME.test(name) ? stringDefaults(schema).map((value) => [name, value] as const) : []));
  t.ok(kasir.some(([name]) => name === 'KASIR_MASTER_KEYS_PREVIOUS'), 'the walk reaches defaults behind wrappers');
  // The simulator's, as it loads them with nothing set (its schema is its own module's).
  const simulator = stringFields(loadSimulatorConfig({})).filter(([path]) => CREDENTIAL_NAME.test(path.split('.').at(-1)!));
  t.ok(simulator.length >= 9, `the simulator's credential defaults found (${simulator.map(([path]) => path).join(', ')})`);
  for (const [name, value] of [...kasir, ...simulator]) {
    if (value === '') continue; // sets nothing
    t.same(publishedCredentials({ [name]: value }), [name], `${name}'s default is refused as a published secret`);
  }
});

t.test('the web process refuses to start while a vendor holds a published secret', async (t) => {
  await upsertVendor(pool, sealer, { code: 'sim', kind: 'simulator', baseUrl: 'http://127.0.0.1:4010', credentials: { secret: 'sim-dev-secret' } });
  await upsertVendor(pool, sealer, {
    code: 'mt',
    kind: 'midtrans',
    baseUrl: 'http://127.0.0.1:4010/midtrans',
    credentials: { serverKey: 'SB-Mid-server-kasir-simulator', qrisAcquirer: 'gopay' },
  });
  const refused = await startWeb();
  t.notOk(refused.listened, 'it never listens');
  t.equal(refused.code, 78, 'exit 78 (configuration)');
  t.match(refused.output, /vendor mt \(serverKey\), sim \(secret\) holds a development secret published with Kasir/);
  t.match(refused.output, /ALLOW_DEVELOPMENT_SECRETS=true/, 'the message names the way out on a development stack');

  const allowed = await startWeb({ ALLOW_DEVELOPMENT_SECRETS: 'true' });
  t.ok(allowed.listened, 'an explicit development setting lets it start');

  await removeVendor(pool, sealer, 'mt');
  await upsertVendor(pool, sealer, { code: 'sim', kind: 'simulator', baseUrl: 'http://127.0.0.1:4010', credentials: { secret: 'a-secret-of-its-own-1234' } });
  const fixed = await startWeb();
  t.ok(fixed.listened, 'once no vendor holds one (one given its own secret, one removed), it starts');
  t.notMatch(fixed.output, /TRUST_PROXY/, 'on loopback, no word about TRUST_PROXY');
});

t.test('listening beyond loopback without TRUST_PROXY is named at start; with it, not', async (t) => {
  const bare = await startWeb({ HOST: '0.0.0.0' });
  t.ok(bare.listened);
  t.match(bare.output, /listening beyond loopback without TRUST_PROXY/);
  const proxied = await startWeb({ HOST: '0.0.0.0', TRUST_PROXY: '1' });
  t.ok(proxied.listened);
  t.notMatch(proxied.output, /TRUST_PROXY/);
});
