import t from 'tap';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ConfigError, directDatabaseUrl, parseConfig, parseMasterKeys, pooledConnections } from '../../db/config.ts';

const base = { DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/kasir', KASIR_MASTER_KEY: 'ab'.repeat(32) };

t.test('defaults fill in what is unset', async (t) => {
  const config = parseConfig(base);
  t.equal(config.PORT, 3000);
  t.equal(config.ORDER_CREATE_DEADLINE_MS, 10_000);
  t.same(config.WEBHOOK_RETRY_SCHEDULE, [5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]);
  t.same(config.NOTIFY_URL_ALLOWLIST, []);
  t.equal(config.IDEMPOTENCY_KEY_TTL_HOURS, 48);
});

t.test('IDEMPOTENCY_KEY_TTL_HOURS: whole hours, 24 at least', async (t) => {
  t.equal(parseConfig({ ...base, IDEMPOTENCY_KEY_TTL_HOURS: '24' }).IDEMPOTENCY_KEY_TTL_HOURS, 24);
  t.equal(parseConfig({ ...base, IDEMPOTENCY_KEY_TTL_HOURS: '720' }).IDEMPOTENCY_KEY_TTL_HOURS, 720);
  for (const bad of ['23', '0', '-48', '36.5', 'forever']) {
    t.throws(() => parseConfig({ ...base, IDEMPOTENCY_KEY_TTL_HOURS: bad }), /IDEMPOTENCY_KEY_TTL_HOURS/, `${bad} is refused`);
  }
});

t.test('HTTP server limits: defaults, no 0 (Node reads it as no limit), headers within the request limit', async (t) => {
  const config = parseConfig(base);
  t.equal(config.HEADERS_TIMEOUT_MS, 10_000);
  t.equal(config.REQUEST_TIMEOUT_MS, 60_000);
  t.equal(config.MAX_CONNECTIONS, 1_000);
  t.equal(parseConfig({ ...base, HEADERS_TIMEOUT_MS: '500', REQUEST_TIMEOUT_MS: '500' }).REQUEST_TIMEOUT_MS, 500);
  t.throws(() => parseConfig({ ...base, REQUEST_TIMEOUT_MS: '0', HEADERS_TIMEOUT_MS: '0' }), /REQUEST_TIMEOUT_MS/);
  t.throws(() => parseConfig({ ...base, MAX_CONNECTIONS: '0' }), /MAX_CONNECTIONS/);
  t.throws(() => parseConfig({ ...base, HEADERS_TIMEOUT_MS: '20000', REQUEST_TIMEOUT_MS: '10000' }), /HEADERS_TIMEOUT_MS: at most REQUEST_TIMEOUT_MS/);
});

t.test('durations and lists parse from text', async (t) => {
  const config = parseConfig({ ...base, WEBHOOK_RETRY_SCHEDULE: '1,2,3', EXPIRY_SWEEP_INTERVAL_MS: '250', NOTIFY_URL_ALLOWLIST: 'hooks.local, 10.0.0.0/8' });
  t.same(config.WEBHOOK_RETRY_SCHEDULE, [1, 2, 3]);
  t.equal(config.EXPIRY_SWEEP_INTERVAL_MS, 250);
  t.same(config.NOTIFY_URL_ALLOWLIST, ['hooks.local', '10.0.0.0/8']);
});

t.test('DATABASE_DIRECT_URL: sessions go there; set apart from DATABASE_URL, pooled connections behave for a pooler', async (t) => {
  const alone = parseConfig(base);
  t.equal(directDatabaseUrl(alone), base.DATABASE_URL, 'unset: DATABASE_URL is Postgres itself');
  t.same(pooledConnections(alone), { throughPooler: false, preparedStatements: true });
  const bouncer = { ...base, DATABASE_URL: 'postgres://u:p@127.0.0.1:6432/kasir', DATABASE_DIRECT_URL: base.DATABASE_URL };
  t.equal(directDatabaseUrl(parseConfig(bouncer)), base.DATABASE_URL);
  t.same(pooledConnections(parseConfig(bouncer)), { throughPooler: true, preparedStatements: false }, 'behind a pooler: no named statements by default');
  t.same(pooledConnections(parseConfig({ ...bouncer, DATABASE_PREPARED_STATEMENTS: 'true' })), { throughPooler: true, preparedStatements: true }, 'PgBouncer 1.21+ may keep them');
  t.same(pooledConnections(parseConfig({ ...base, DATABASE_DIRECT_URL: '' })), { throughPooler: false, preparedStatements: true }, 'empty is unset');
  t.throws(() => parseConfig({ ...base, DATABASE_PREPARED_STATEMENTS: 'yes' }), /DATABASE_PREPARED_STATEMENTS/);
  t.throws(() => parseConfig({ ...base, DATABASE_REPLICA_URL: 'mysql://x' }), /DATABASE_REPLICA_URL/);
  t.equal(parseConfig(base).DATABASE_REPLICA_MAX_LAG_MS, 5_000);
});

t.test('master keys: previous keys as a list, the bound-only switch, and both keys from files', async (t) => {
  const [a, b, c] = ['1a'.repeat(32), '2B'.repeat(32), '3c'.repeat(32)];
  const plain = parseConfig(base);
  t.same(plain.KASIR_MASTER_KEYS_PREVIOUS, [], 'no previous keys by default');
  t.equal(plain.KASIR_SEALED_REQUIRE_BOUND, false, 'unbound values still open by default');
  t.same(parseConfig({ ...base, KASIR_MASTER_KEYS_PREVIOUS: `${a}, ${b},${c}` }).KASIR_MASTER_KEYS_PREVIOUS, [a, b, c], 'comma-separated, spaces allowed');
  t.same(parseConfig({ ...base, KASIR_MASTER_KEYS_PREVIOUS: '' }).KASIR_MASTER_KEYS_PREVIOUS, [], 'empty is none');
  t.equal(parseConfig({ ...base, KASIR_SEALED_REQUIRE_BOUND: 'true' }).KASIR_SEALED_REQUIRE_BOUND, true);
  t.equal(parseConfig({ ...base, KASIR_SEALED_REQUIRE_BOUND: '' }).KASIR_SEALED_REQUIRE_BOUND, false);
  t.throws(() => parseConfig({ ...base, KASIR_SEALED_REQUIRE_BOUND: 'yes' }), /KASIR_SEALED_REQUIRE_BOUND: true or false/);
  let refused: Error | undefined;
  try {
    parseConfig({ ...base, KASIR_MASTER_KEYS_PREVIOUS: `${a},${'4d'.repeat(31)}` });
  } catch (err) {
    refused = err as Error;
  }
  t.match(refused?.message, /KASIR_MASTER_KEYS_PREVIOUS\.1: keys of 64 hex characters/, 'a short key is named by its place in the list');
  t.notMatch(refused?.message, '4d4d', 'and not echoed');

  const dir = t.testdir({ current: `${a}
`, previous: `${b}
${c}
`, empty: '' });
  const fromFiles = parseMasterKeys({ KASIR_MASTER_KEY_FILE: `${dir}/current`, KASIR_MASTER_KEYS_PREVIOUS_FILE: `${dir}/previous` });
  t.same(fromFiles, { KASIR_MASTER_KEY: a, KASIR_MASTER_KEYS_PREVIOUS: [b, c], KASIR_SEALED_REQUIRE_BOUND: false }, 'files read, one key a line');
  const full = parseConfig({ DATABASE_URL: base.DATABASE_URL, KASIR_MASTER_KEY_FILE: `${dir}/current`, KASIR_MASTER_KEY: '' });
  t.equal(full.KASIR_MASTER_KEY, a, 'the whole configuration reads the file too; an empty variable is unset');
  t.throws(() => parseMasterKeys({ KASIR_MASTER_KEY: b, KASIR_MASTER_KEY_FILE: `${dir}/current` }), /KASIR_MASTER_KEY_FILE: give KASIR_MASTER_KEY or KASIR_MASTER_KEY_FILE, not both/);
  t.throws(() => parseMasterKeys({ KASIR_MASTER_KEY_FILE: `${dir}/missing` }), /KASIR_MASTER_KEY_FILE: cannot read .*missing \(ENOENT\)/);
  t.throws(() => parseMasterKeys({ KASIR_MASTER_KEY_FILE: `${dir}/empty` }), /KASIR_MASTER_KEY: /, 'an empty file is no key');
  t.throws(() => parseMasterKeys({ KASIR_MASTER_KEY: a, KASIR_MASTER_KEYS_PREVIOUS_FILE: `${dir}/current`, KASIR_SEALED_REQUIRE_BOUND: 'maybe' }), /KASIR_SEALED_REQUIRE_BOUND/, 'the rest is still checked');
});

t.test('a bad value is rejected with the variable named', async (t) => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ PORT: 'eighty' }, /PORT/],
    [{ PORT: '70000' }, /PORT/],
    [{ KASIR_MASTER_KEY: 'short' }, /KASIR_MASTER_KEY/],
    [{ DATABASE_URL: 'mysql://x' }, /DATABASE_URL/],
    [{ PUBLIC_BASE_URL: 'ftp://files' }, /PUBLIC_BASE_URL/],
    [{ WEBHOOK_RETRY_SCHEDULE: '5,soon' }, /WEBHOOK_RETRY_SCHEDULE/],
    [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL/],
    [{ ORDER_CREATE_DEADLINE_MS: '-1' }, /ORDER_CREATE_DEADLINE_MS/],
  ];
  for (const [override, pattern] of cases) {
    let caught: unknown;
    try {
      parseConfig({ ...base, ...override });
    } catch (err) {
      caught = err;
    }
    t.ok(caught instanceof ConfigError, `${JSON.stringify(override)} is a ConfigError`);
    t.match((caught as Error)?.message, pattern, 'names the variable');
  }
  t.throws(() => parseConfig({ KASIR_MASTER_KEY: base.KASIR_MASTER_KEY }), /DATABASE_URL/, 'missing is named too');
});

t.test('a process with a bad value stops before doing anything, naming the variable', async (t) => {
  const entry = fileURLToPath(new URL('../../api/server.ts', import.meta.url));
  const result = spawnSync(process.execPath, [entry], { env: { ...process.env, ...base, PORT: 'x' }, encoding: 'utf8', timeout: 20_000 });
  t.equal(result.status, 78);
  t.match(result.stderr, /invalid configuration:[\s\S]*PORT/);
});
