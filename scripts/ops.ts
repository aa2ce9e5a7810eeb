// The operator CLI: `npm run --silent ops -- <command> [flags] [--json]`.
// Human text by default, one JSON object with --json; bad input exits non-zero with a message
// naming the flag. With DATABASE_URL unset it uses the embedded cluster of a running
// `npm start`, or starts that cluster for the duration of the command. Logs go to stderr, so
// stdout holds only the answer.
import './ops/logs-to-stderr.ts';
import module from 'node:module';
import { parseArgs } from 'node:util';
import type { PgBoss } from 'pg-boss';
import type { Reader } from '../db/plain-reader.ts';
import type { Pool } from '../db/pool.ts';
import type { Sealer } from '../db/secrets.ts';
import { OpsError, type Command, type OpsContext } from './ops/command.ts';
import { COMMANDS, loadAll } from './ops/registry.ts';
import { readSecretFiles, secretFileFlags, secretFileUsage } from './ops/secret-input.ts';

// Type stripping and compiling Kasir's modules was most of a command's start (about 1.4 s of
// CPU with every command loaded): each command loads only its own modules (scripts/ops/registry.ts),
// and Node's compile cache keeps what it compiled for the next run (NODE_COMPILE_CACHE, or the
// system's temporary directory), so a script calling a command in a loop pays it once.
module.enableCompileCache?.();

async function help(): Promise<string> {
  const commands = await loadAll();
  return [
    'usage: npm run --silent ops -- <command> [flags] [--json]',
    '',
    'Every flag that takes a secret also takes --FLAG-file PATH (PATH "-" reads stdin). Prefer it:',
    'a secret in the arguments is visible to other users in `ps` and kept in shell history.',
    '',
    ...commands.map((c) => `  ${c.usage}\n      ${c.summary}${c.secretFlags?.length ? `\n      ${secretFileUsage(c.secretFlags)}` : ''}`),
  ].join('\n');
}

/** The command a typo most likely meant: the closest by edit distance, if it is close at all. */
function nearest(typed: string, names: string[]): string | null {
  const distance = (a: string, b: string) => {
    let row = Array.from({ length: b.length + 1 }, (_, j) => j);
    for (let i = 1; i <= a.length; i++) {
      const next = [i];
      for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      row = next;
    }
    return row[b.length];
  };
  const ranked = names.map((n) => ({ n, d: distance(typed.toLowerCase(), n) })).sort((x, y) => x.d - y.d);
  return ranked[0] && ranked[0].d <= Math.max(2, Math.floor(typed.length / 3)) ? ranked[0].n : null;
}

function fail(message: string, json: boolean, code = 1): never {
  if (json) process.stdout.write(`${JSON.stringify({ error: message })}\n`);
  else process.stderr.write(`error: ${message}\n`);
  process.exit(code);
}

const [name, ...rest] = process.argv.slice(2);
const json = rest.includes('--json');
if (!name || name === 'help' || name === '--help') {
  process.stdout.write(`${await help()}\n`);
  process.exit(name ? 0 : 64);
}
const load = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
if (!load) {
  const near = nearest(name, Object.keys(COMMANDS));
  fail(near ? `unknown command ${name}; did you mean ${near}?\nusage: ${(await COMMANDS[near]!()).usage}` : `unknown command ${name}\n${await help()}`, json, 64);
}
const cmd: Command = await load();

let values: Record<string, unknown>;
try {
  const options = { ...cmd.flags, ...secretFileFlags(cmd.secretFlags ?? []), json: { type: 'boolean' as const } };
  values = parseArgs({ args: rest, options, strict: true, allowPositionals: false }).values;
  await readSecretFiles(values, cmd.secretFlags ?? []);
} catch (err) {
  fail(`${(err as Error).message}\nusage: ${cmd.usage}`, json, 64);
}
delete values.json;
const parsed = cmd.input.safeParse(values);
if (!parsed.success) {
  const issue = parsed.error.issues[0];
  const flag = issue.path.length ? `--${issue.path.join('.')}` : '';
  // A flag left out reads as zod's "expected string, received undefined" unless its schema says more.
  const missing = issue.code === 'invalid_type' && flag && values[String(issue.path[0])] === undefined && /received undefined/.test(issue.message);
  const text = missing ? `${flag} is required` : flag && !issue.message.startsWith(flag) ? `${flag}: ${issue.message}` : issue.message;
  fail(`${text}\nusage: ${cmd.usage}`, json, 64);
}

/** The longest one statement of a command may run: bulk reads and writes at a year of data. */
const OPS_STATEMENT_TIMEOUT_MS = 10 * 60_000;

const { databaseUnreachable, resolveDatabase } = await import('./lib/local.ts');
const database = await resolveDatabase();
let pool: Pool | null = null;
let reader: (Reader & { end(): Promise<void> }) | null = null;
let boss: PgBoss | null = null;
// Each of these loads its modules when a command first asks for it: a list that only reads
// (scripts/ops/lists.ts) never loads slonik, zod, pg-boss or the sealer's configuration.
const ctx: OpsContext = {
  databaseUrl: database.url,
  pool: async () => {
    if (pool) return pool;
    const { createPool } = await import('../db/pool.ts');
    return (pool = await createPool(database.url, { size: 2, name: 'ops', statementTimeoutMs: OPS_STATEMENT_TIMEOUT_MS }));
  },
  reader: async () => {
    if (reader) return reader;
    const { openReader } = await import('../db/plain-reader.ts');
    return (reader = await openReader(database.url, { statementTimeoutMs: OPS_STATEMENT_TIMEOUT_MS, applicationName: 'ops' }));
  },
  boss: async () => (boss ??= await (await import('../db/queue.ts')).startBoss(database.url, { role: 'sender', poolSize: 2 })),
  sealer: async (): Promise<Sealer> => {
    const env = { ...process.env };
    // Without a key of its own, the local cluster's (resolveDatabase: .data/kasir.json).
    if (!env.KASIR_MASTER_KEY && !env.KASIR_MASTER_KEY_FILE) env.KASIR_MASTER_KEY = database.masterKey;
    if (!env.KASIR_MASTER_KEY && !env.KASIR_MASTER_KEY_FILE) fail('KASIR_MASTER_KEY is required with DATABASE_URL to read or write secrets', json);
    const { ConfigError, parseMasterKeys } = await import('../db/config.ts');
    const { createSealer } = await import('../db/secrets.ts');
    try {
      return createSealer(parseMasterKeys(env));
    } catch (err) {
      if (err instanceof ConfigError) fail(err.message, json);
      throw err;
    }
  },
};

let exitCode = 0;
try {
  const result = await cmd.run(ctx, parsed.data);
  process.stdout.write(json ? `${JSON.stringify(result.json)}\n` : `${result.text}\n`);
  exitCode = result.exitCode ?? 0;
} catch (err) {
  const { MerchantNotFound } = await import('../db/merchants.ts');
  const { isDatabaseUnavailable } = await import('../db/pool.ts');
  // Refusals and an unreachable database are one line; anything else is a bug, with its stack
  // on stderr (and, with --json, its message as the one object on stdout).
  const message =
    err instanceof OpsError || err instanceof MerchantNotFound
      ? err.message
      : isDatabaseUnavailable(err)
        ? databaseUnreachable(database.url, err)
        : null;
  if (message === null) process.stderr.write(`error: ${(err as Error).stack ?? err}\n`);
  if (json) process.stdout.write(`${JSON.stringify({ error: message ?? String((err as Error).message ?? err) })}\n`);
  else if (message !== null) process.stderr.write(`error: ${message}\n`);
  exitCode = 1;
} finally {
  await (boss as PgBoss | null)?.stop({ graceful: false });
  await (pool as Pool | null)?.end();
  await (reader as { end(): Promise<void> } | null)?.end();
  await database.release();
}
process.exit(exitCode);
