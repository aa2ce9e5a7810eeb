// npm test: runs the tap suite against a real Postgres. Without DATABASE_URL it starts a
// throwaway embedded cluster (fsync off) in a temporary directory; with it, it uses that
// server (the role needs CREATEDB). Either way it migrates one template database, and each
// test file clones its own database from it (test/helpers/db.ts), so files run in parallel.
// Extra arguments go to tap: `npm test -- test/api/auth.test.ts`.
//
// In order, cheapest answer first: what the machine lacks for the chosen files (the preflight,
// instant), the type check and the dependency rules (a minute or more on 2 cores), then
// Postgres and tap. `--available` runs every chosen file whose needs are met and names the
// others. A file that outlives tap's per-file timeout is named as stopped, not failed
// (scripts/lib/test-timeout-notice.ts).
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, chmod, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import pg from 'pg';
import { prepareDatabase } from '../db/migrate.ts';
import { ensureDatabase, newPassword, startCluster, type Cluster } from './lib/cluster.ts';
import { ROOT } from './lib/local.ts';
import { leftOutMessage, plan, preflightMessage, selectedFiles } from './lib/test-preflight.ts';
import { timeoutNotice } from './lib/test-timeout-notice.ts';

// Before anything starts: what the chosen files need from the machine (Chromium, PgBouncer, …).
const { tapArgs, missing, leftOut } = plan(process.argv.slice(2), ROOT);
if (missing.length) {
  console.error(preflightMessage(missing, selectedFiles(tapArgs, ROOT)));
  process.exit(1);
}
if (leftOut.length) {
  console.error(leftOutMessage(leftOut));
  if (!tapArgs.some((a) => a.endsWith('.test.ts'))) process.exit(1);
}

// KASIR_TEST_SKIP_CHECKS=1: the same tree was checked by an earlier run (.ci/run's second suite).
for (const step of process.env.KASIR_TEST_SKIP_CHECKS === '1' ? [] : ['typecheck', 'deps']) {
  console.error(`npm test: ${step}…`);
  const code = await run('npm', ['run', '--silent', step], process.env);
  if (code !== 0) process.exit(code);
}

const TEMPLATE = `kasir_template_${process.pid}`;
let cluster: Cluster | null = null;
let dir: string | null = null;
let adminUrl = process.env.DATABASE_URL;

if (!adminUrl) {
  dir = await mkdtemp(`${tmpdir()}/kasir-test-`);
  await chmod(dir, 0o755); // the postgres user must traverse it when tests run as root
  cluster = await startCluster({ dataDir: `${dir}/pg`, password: newPassword(), ephemeral: true });
  adminUrl = cluster.url('postgres');
}

async function cleanup() {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect().then(
    () => admin.query(`drop database if exists "${TEMPLATE}" with (force)`).finally(() => admin.end()),
    () => undefined,
  );
  await cluster?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
}

let code = 1;
try {
  const templateUrl = cluster ? await ensureDatabase(cluster, TEMPLATE) : await createTemplate(adminUrl);
  await prepareDatabase(templateUrl);
  code = await runTap(tapArgs, {
    KASIR_TEST_ADMIN_URL: adminUrl,
    KASIR_TEST_TEMPLATE: TEMPLATE,
  });
} finally {
  await cleanup();
}
process.exit(code);

/** A command with the terminal's stdio; its exit code. */
function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: ROOT, env, stdio: 'inherit' });
    const forward = (signal: NodeJS.Signals) => child.kill(signal);
    process.on('SIGINT', forward);
    process.on('SIGTERM', forward);
    child.on('exit', (exitCode, signal) => {
      process.off('SIGINT', forward);
      process.off('SIGTERM', forward);
      resolve(exitCode ?? (signal ? 1 : 0));
    });
  });
}

async function createTemplate(url: string): Promise<string> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query(`create database "${TEMPLATE}"`);
  } finally {
    await admin.end();
  }
  const target = new URL(url);
  target.pathname = `/${TEMPLATE}`;
  return target.toString();
}

/** tap's per-file timeout in seconds: its --timeout argument, else package.json's tap.timeout. */
function timeoutSeconds(args: string[]): string {
  const flag = args.map((a) => /^(?:--timeout|-t)=?(\d+)$/.exec(a)?.[1]).find(Boolean);
  if (flag) return flag;
  const i = args.findIndex((a) => a === '--timeout' || a === '-t');
  if (i >= 0 && args[i + 1]) return args[i + 1];
  return String((JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { tap: { timeout: number } }).tap.timeout);
}

async function runTap(args: string[], extraEnv: Record<string, string>): Promise<number> {
  const seconds = timeoutSeconds(args);
  const timeouts = `${dir ?? tmpdir()}/timeouts-${process.pid}`;
  const code = await run(`${ROOT}node_modules/.bin/tap`, [`--node-arg=--import=${ROOT}scripts/lib/test-timeout-notice.ts`, ...args], {
    ...process.env, ...extraEnv, DATABASE_URL: '', LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    KASIR_TEST_TIMEOUTS: timeouts, KASIR_TEST_TIMEOUT_SECONDS: seconds,
    // tap finds `node` on PATH: make it the project's Node 24 even outside npm scripts.
    PATH: `${ROOT}node_modules/.bin:${process.env.PATH}`,
  });
  if (existsSync(timeouts)) {
    const stopped = readFileSync(timeouts, 'utf8').split('\n').filter(Boolean);
    await rm(timeouts, { force: true });
    console.error([
      ...stopped.map((file) => timeoutNotice(file, seconds)),
      'A busy machine slows every file: run the stopped ones again alone (npm test -- <file>), or with a longer --timeout.',
    ].join('\n'));
  }
  return code;
}
