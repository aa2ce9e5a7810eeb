// npm run soak -- --seconds N: the crash soak (docs/reliability.md). Kasir on a throwaway
// Postgres cluster, every Procfile line a real supervised process, a mixed merchant load over
// real HTTP, and for N seconds the chaos: a random process SIGKILLed every 3–8 s, Postgres
// SIGKILLed at least twice in a run of 60 s or more. Then the chaos stops, the work drains
// (polled, with a deadline) and the audit compares what clients were told with what the
// database holds. Exits 1 on any miss, with the misses printed; 0 when every check holds.
//
// It needs a Postgres of its own to kill: with DATABASE_URL set it refuses.
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { parseArgs } from 'node:util';
import { createPool } from '../db/pool.ts';
import { audit, processChecks } from './soak/audit.ts';
import { runChaos, runFailovers } from './soak/chaos.ts';
import { Client } from './soak/client.ts';
import { drain } from './soak/drain.ts';
import { operations, startLoad, type LoadTarget } from './soak/load.ts';
import { startPatroniCluster } from './soak/patroni.ts';
import { formatFailovers, formatReport } from './soak/report.ts';
import { startStack, type Started } from './soak/stack.ts';
import { Tally } from './soak/tally.ts';

const USAGE = 'usage: npm run soak -- [--seconds N (default 60; 90 with --failover)] [--drain-seconds N (default 30)] [--keep]\n'
  + '                     [--failover [--kills N (default 2)] [--multi-host]]   the failover drill (docs/reliability.md)';

/**
 * After the chaos, how long the drain may take. It holds the 15 s in which work cut off by a
 * crash must be retried (10 s job heartbeat + 5 s supervision pass), plus the first retry
 * delays and a vendor round trip of the work retried, plus the disbursement reconcile delay.
 */
const DEFAULT_DRAIN_SECONDS = 30;
/** Until the stack has been restarted by the end of the chaos, no drain clock runs. */
const READY_AFTER_CHAOS_MS = 60_000;

let args;
try {
  args = parseArgs({
    options: { seconds: { type: 'string' }, failover: { type: 'boolean', default: false }, kills: { type: 'string', default: '2' }, 'multi-host': { type: 'boolean', default: false }, 'drain-seconds': { type: 'string', default: String(DEFAULT_DRAIN_SECONDS) }, keep: { type: 'boolean', default: false }, help: { type: 'boolean', default: false } },
  }).values;
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
  process.exit(64);
}
if (args.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const failover = args.failover;
const seconds = Number(args.seconds ?? (failover ? 90 : 60));
const failoverKills = Number(args.kills);
if (!Number.isInteger(failoverKills) || failoverKills < 1) {
  process.stderr.write(`--kills must be a whole number of at least 1\n${USAGE}\n`);
  process.exit(64);
}
const drainSeconds = Number(args['drain-seconds']);
if (!Number.isInteger(seconds) || seconds < 10 || !Number.isInteger(drainSeconds) || drainSeconds < 1) {
  process.stderr.write(`--seconds must be a whole number of at least 10, --drain-seconds at least 1\n${USAGE}\n`);
  process.exit(64);
}
if (process.env.DATABASE_URL || process.env.DATABASE_DIRECT_URL) {
  process.stderr.write('the soak kills and restarts its own PostgreSQL, so it does not run on DATABASE_URL: unset DATABASE_URL (and DATABASE_DIRECT_URL)\n');
  process.exit(64);
}

const phases: Record<string, number> = {};
let phaseStart = Date.now();
const phase = (name: string) => {
  phases[name] = Date.now() - phaseStart;
  phaseStart = Date.now();
};
const say = (line: string) => process.stdout.write(`${line}\n`);

const dir = await mkdtemp(`${tmpdir()}/kasir-soak-`);
await chmod(dir, 0o755); // the postgres user must traverse it when running as root
const started: Started = {};
let stopping: Promise<void> | null = null;
const stopAll = () =>
  (stopping ??= (async () => {
    await started.supervisor?.stop();
    await started.receiver?.close();
    await started.postgres?.stop();
  })());
// Whatever way this process ends, nothing it started outlives it.
process.once('exit', () => {
  started.supervisor?.killNow();
  started.postgres?.killNow();
});
// Interrupted: everything is throwaway, so the exit handler's SIGKILLs are stop enough (a
// graceful stop would wait on the load's open connections). The directory stays, as after a failure.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stderr.write(`soak: interrupted; logs and cluster left in ${dir}\n`);
    process.exit(130);
  });
}

say(failover
  ? `failover drill: ${failoverKills} primary kills in ${seconds} s of load, drain deadline ${drainSeconds} s; working in ${dir}`
  : `soak: ${seconds} s of chaos, drain deadline ${drainSeconds} s; working in ${dir}`);
// The drill's Postgres: a Patroni cluster (scripts/soak/patroni.ts) Kasir reaches through HAProxy or a host list.
const postgresFor = failover
  ? (root: string, logDir: string) => startPatroniCluster(`${root}/cluster`, logDir, { multiHost: args['multi-host'], log: (line) => say(`  cluster: ${line}`) })
  : undefined;
const stack = await startStack(dir, started, postgresFor).catch(async (err) => {
  process.stderr.write(`soak: the stack did not start: ${(err as Error).message}\n`);
  await stopAll();
  process.exit(1);
});
phase('setup');
say(`soak: ${stack.supervisor.names.length} processes up (${stack.supervisor.names.join(', ')}); load and chaos for ${seconds} s`);

const target: LoadTarget = {
  apiUrl: stack.apiUrl,
  simulatorUrl: stack.simulatorUrl,
  apiKey: stack.merchant.apiKey,
  webhookSecret: stack.merchant.webhookSecret,
  receiverUrl: stack.receiver.url,
  runId: randomBytes(3).toString('hex'),
};
const client = new Client();
const tally = new Tally();
const load = startLoad(target, client, tally, Math.round(seconds * 1000 * 0.3));
if (failover) await runFailovers(seconds * 1000, failoverKills, stack.postgres, (line) => say(`  failover ${line}`));
else await runChaos(seconds * 1000, stack.supervisor, stack.postgres, (line) => say(`  chaos ${line}`));
await load.stop();
// A process that cannot come back is a finding, not a reason to skip the audit.
const notBack = await stack.supervisor.allReady(READY_AFTER_CHAOS_MS).then(
  () => [],
  (err: Error) => [err.message],
);
phase('chaos');

say(`soak: chaos over, ${notBack.length ? notBack[0] : 'every process up'}; draining`);
const pool = await createPool(stack.databaseUrl, { size: 3, name: 'soak-audit' });
const drained = await drain({
  pool,
  tally,
  client,
  ops: operations(target, client, tally),
  apiUrl: stack.apiUrl,
  apiKey: stack.merchant.apiKey,
  simulatorKills: stack.supervisor.kills.filter((k) => k.name === 'simulator'),
  deadlineMs: drainSeconds * 1000,
});
phase('drain');

const checks = [
  ...processChecks(notBack, stack.supervisor.ownExits, stack.postgres.crashes),
  ...(await audit({ pool, tally, client, target, merchantId: stack.merchant.id, receiver: stack.receiver, crashes: stack.postgres.crashes })),
];
phase('audit');
await pool.end();
await stopAll();
phase('stop');

const failed = checks.some((c) => c.misses.length > 0);
process.stdout.write(
  formatReport({
    seconds,
    phases,
    tally,
    client,
    kills: stack.supervisor.kills,
    ownExits: stack.supervisor.ownExits,
    crashes: stack.postgres.crashes,
    drain: drained,
    drainDeadlineMs: drainSeconds * 1000,
    checks,
    dir,
  }) + (failover ? formatFailovers(stack.postgres.crashes, client) : ''),
);
// A failed run keeps its directory (process logs, the cluster) for the post-mortem.
if (!failed && !args.keep) await rm(dir, { recursive: true, force: true });
process.exit(failed ? 1 : 0);
