// npm test: runs the tap suite against a real Postgres. Without DATABASE_URL it starts a
// throwaway embedded cluster (fsync off) in a temporary directory; with it, it uses that
// server (the role needs CREATEDB). Either way it migrates one template database, and each
// test file clones its own database from it (test/helpers/db.ts), so files run in parallel.
// Extra arguments go to tap: `npm test -- test/api/auth.test.ts`.
import { spawn } from 'node:child_process';
import { mkdtemp, chmod, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import pg from 'pg';
import { prepareDatabase } from '../db/migrate.ts';
import { ensureDatabase, newPassword, startCluster, type Cluster } from './lib/cluster.ts';
import { ROOT } from './lib/local.ts';
import { missingFor, preflightMessage, selectedFiles } from './lib/test-preflight.ts';

// Before anything starts: what the chosen files need from the machine (Chromium, PgBouncer, …).
const files = selectedFiles(process.argv.slice(2), ROOT);
const missing = missingFor(files);
if (missing.length) {
  console.error(preflightMessage(missing, files));
  process.exit(1);
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
  code = await runTap(process.argv.slice(2), {
    KASIR_TEST_ADMIN_URL: adminUrl,
    KASIR_TEST_TEMPLATE: TEMPLATE,
  });
} finally {
  await cleanup();
}
process.exit(code);

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

function runTap(args: string[], extraEnv: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(`${ROOT}node_modules/.bin/tap`, args, {
      cwd: ROOT,
      // tap finds `node` on PATH: make it the project's Node 24 even outside npm scripts.
      env: { ...process.env, ...extraEnv, DATABASE_URL: '', LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', PATH: `${ROOT}node_modules/.bin:${process.env.PATH}` },
      stdio: 'inherit',
    });
    const forward = (signal: NodeJS.Signals) => child.kill(signal);
    process.on('SIGINT', forward);
    process.on('SIGTERM', forward);
    child.on('exit', (exitCode, signal) => resolve(exitCode ?? (signal ? 1 : 0)));
  });
}
