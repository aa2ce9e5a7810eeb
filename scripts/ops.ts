// The operator CLI: `npm run --silent ops -- <command> [flags] [--json]`.
// Human text by default, one JSON object with --json; bad input exits non-zero with a message
// naming the flag. With DATABASE_URL unset it uses the embedded cluster of a running
// `npm start`, or starts that cluster for the duration of the command.
import { parseArgs } from 'node:util';
import type { PgBoss } from 'pg-boss';
import { ConfigError, parseMasterKeys } from '../db/config.ts';
import { createPool, OPS_STATEMENT_TIMEOUT_MS, type Pool } from '../db/pool.ts';
import { startBoss } from '../db/queue.ts';
import { createSealer, type Sealer } from '../db/secrets.ts';
import { MerchantNotFound } from '../db/merchants.ts';
import { OpsError, type Command, type OpsContext } from './ops/command.ts';
import { readSecretFiles, secretFileFlags, secretFileUsage } from './ops/secret-input.ts';
import { secretsReseal } from './ops/secrets.ts';
import { jobsList, jobsPing, jobsRerun } from './ops/jobs.ts';
import {
  brandCreate,
  brandSetCheckoutLanguage,
  merchantCreate,
  merchantRotateKey,
  merchantRotateLegacySecret,
  merchantSetNotifyUrl,
  merchantSetPublicKey,
  merchantSetStatus,
  merchantSetWebhookSecret,
} from './ops/merchants.ts';
import { ledgerAdjust, ledgerAudit, merchantSetFees } from './ops/ledger.ts';
import { retentionRun } from './ops/retention.ts';
import { disbursementsApprove, disbursementsReject } from './ops/disbursements.ts';
import { payoutsSettle } from './ops/payouts.ts';
import { reconExport, reconResolve, reconRun, reconSetCost, reconShow } from './ops/recon.ts';
import { refundsResend, refundsSettle, unresolvedList } from './ops/unresolved.ts';
import { merchantSetSettlementAccount, settlementsCancel, settlementsList, settlementsRetry, settlementsRun } from './ops/settlements.ts';
import { resolveDatabase } from './lib/local.ts';
import { routeList, routeSet, vendorAdd, vendorCheck, vendorConflicts, vendorDisable, vendorList, vendorRemove } from './ops/vendors.ts';
import { simulatePay, webhooksList, webhooksResend, webhooksTrigger } from './ops/orders.ts';
import { userIssueKey, userList, userRevokeKey } from './ops/users.ts';
import { banksDisable, banksEnable, banksList, ewalletsDisable, ewalletsEnable, ewalletsList } from './ops/master-data.ts';

const commands: Command[] = [
  merchantCreate,
  brandCreate,
  brandSetCheckoutLanguage,
  merchantSetStatus,
  merchantRotateKey,
  merchantRotateLegacySecret,
  merchantSetPublicKey,
  merchantSetWebhookSecret,
  merchantSetNotifyUrl,
  merchantSetFees,
  merchantSetSettlementAccount,
  ledgerAudit,
  ledgerAdjust,
  retentionRun,
  disbursementsApprove,
  disbursementsReject,
  payoutsSettle,
  reconRun,
  reconShow,
  reconResolve,
  reconSetCost,
  reconExport,
  unresolvedList,
  refundsSettle,
  refundsResend,
  settlementsRun,
  settlementsList,
  settlementsRetry,
  settlementsCancel,
  vendorAdd,
  vendorCheck,
  vendorList,
  vendorDisable,
  vendorRemove,
  vendorConflicts,
  routeSet,
  routeList,
  banksList,
  banksEnable,
  banksDisable,
  ewalletsList,
  ewalletsEnable,
  ewalletsDisable,
  userList,
  userIssueKey,
  userRevokeKey,
  simulatePay,
  webhooksList,
  webhooksResend,
  webhooksTrigger,
  jobsList,
  jobsRerun,
  jobsPing,
  secretsReseal,
] as Command[];

function help(): string {
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
  process.stdout.write(`${help()}\n`);
  process.exit(name ? 0 : 64);
}
const cmd = commands.find((c) => c.name === name);
if (!cmd) {
  const near = nearest(name, commands.map((c) => c.name));
  fail(near ? `unknown command ${name}; did you mean ${near}?\nusage: ${commands.find((c) => c.name === near)!.usage}` : `unknown command ${name}\n${help()}`, json, 64);
}

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

const database = await resolveDatabase();
let pool: Pool | null = null;
let boss: PgBoss | null = null;
const ctx: OpsContext = {
  databaseUrl: database.url,
  pool: async () => (pool ??= await createPool(database.url, { size: 2, name: 'ops', statementTimeoutMs: OPS_STATEMENT_TIMEOUT_MS })),
  boss: async () => (boss ??= await startBoss(database.url, { role: 'sender', poolSize: 2 })),
  sealer: (): Sealer => {
    const env = { ...process.env };
    // Without a key of its own, the local cluster's (resolveDatabase: .data/kasir.json).
    if (!env.KASIR_MASTER_KEY && !env.KASIR_MASTER_KEY_FILE) env.KASIR_MASTER_KEY = database.masterKey;
    if (!env.KASIR_MASTER_KEY && !env.KASIR_MASTER_KEY_FILE) fail('KASIR_MASTER_KEY is required with DATABASE_URL to read or write secrets', json);
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
  if (err instanceof OpsError || err instanceof MerchantNotFound) {
    if (json) process.stdout.write(`${JSON.stringify({ error: err.message })}\n`);
    else process.stderr.write(`error: ${err.message}\n`);
  } else {
    process.stderr.write(`error: ${(err as Error).stack ?? err}\n`);
  }
  exitCode = 1;
} finally {
  await (boss as PgBoss | null)?.stop({ graceful: false });
  await (pool as Pool | null)?.end();
  await database.release();
}
process.exit(exitCode);
