// Local development state under .data/ (git-ignored):
//   .data/kasir.json    generated once: the embedded cluster's password and the dev master key
//   .data/pg/           the embedded cluster's data directory
//   .data/running.json  written by a running `npm start`: its database URL and pid, so the ops
//                       CLI talks to that cluster instead of starting another on the same data
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { newMasterKey } from '../../db/secrets.ts';
import { ensureDatabase, newPassword, startCluster, type Cluster } from './cluster.ts';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const DATA_DIR = `${ROOT}.data`;
const STATE_FILE = `${DATA_DIR}/kasir.json`;
const RUNNING_FILE = `${DATA_DIR}/running.json`;

interface LocalState {
  postgres_password: string;
  master_key: string;
}

export async function localState(): Promise<LocalState> {
  if (existsSync(STATE_FILE)) return JSON.parse(await readFile(STATE_FILE, 'utf8')) as LocalState;
  await mkdir(DATA_DIR, { recursive: true });
  // The postgres user (when running as root) must traverse .data to reach .data/pg.
  await chmod(DATA_DIR, 0o755);
  const state = { postgres_password: newPassword(), master_key: newMasterKey() };
  await writeFile(STATE_FILE, JSON.stringify(state, null, 2), { mode: 0o600 });
  return state;
}

/** Starts the local cluster and makes sure its `kasir` database exists. */
export async function startLocalCluster(): Promise<{ cluster: Cluster; url: string }> {
  const state = await localState();
  const cluster = await startCluster({ dataDir: `${DATA_DIR}/pg`, password: state.postgres_password });
  return { cluster, url: await ensureDatabase(cluster, 'kasir') };
}

export async function recordRunning(databaseUrl: string): Promise<void> {
  await writeFile(RUNNING_FILE, JSON.stringify({ database_url: databaseUrl, pid: process.pid }), { mode: 0o600 });
}

export async function clearRunning(): Promise<void> {
  await rm(RUNNING_FILE, { force: true });
}

async function runningUrl(): Promise<string | null> {
  if (!existsSync(RUNNING_FILE)) return null;
  const running = JSON.parse(await readFile(RUNNING_FILE, 'utf8')) as { database_url: string; pid: number };
  try {
    process.kill(running.pid, 0);
    return running.database_url;
  } catch {
    return null; // stale file from a killed `npm start`
  }
}

/**
 * The database a script should use: DATABASE_DIRECT_URL or DATABASE_URL when set (a script is
 * one short session: migrations and ops commands go to Postgres itself, never through a
 * transaction pooler); else the cluster of a running `npm start`; else the local cluster,
 * started for the duration of the script.
 */
export async function resolveDatabase(): Promise<{ url: string; masterKey: string | undefined; release(): Promise<void> }> {
  const masterKey = process.env.KASIR_MASTER_KEY;
  const given = process.env.DATABASE_DIRECT_URL || process.env.DATABASE_URL;
  if (given) return { url: given, masterKey, release: async () => {} };
  const state = await localState();
  const running = await runningUrl();
  if (running) return { url: running, masterKey: masterKey ?? state.master_key, release: async () => {} };
  const { cluster, url } = await startLocalCluster();
  // Loaded only here: a command given DATABASE_URL, or finding `npm start`'s cluster, never migrates.
  const { prepareDatabase } = await import('../../db/migrate.ts');
  await prepareDatabase(url); // a first-ever command may come before the first `npm start`
  return { url, masterKey: masterKey ?? state.master_key, release: () => cluster.stop() };
}

/**
 * The one line a script prints when its database cannot be reached (no stack: the cause is
 * the address, not the code): where it tried, why, and the two ways out.
 */
export function databaseUnreachable(url: string, err: unknown): string {
  let where = 'the database';
  try {
    const u = new URL(url);
    where = `the database at ${u.hostname || 'localhost'}:${u.port || 5432}`;
  } catch {
    // not a URL (a key=value connection string): say no more than "the database"
  }
  let why: unknown;
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5 && why === undefined; e = e.cause, depth++) why = (e as { code?: unknown }).code;
  return `cannot reach ${where}${typeof why === 'string' ? ` (${why})` : ''}: check DATABASE_URL, or leave it unset and \`npm start\` runs an embedded Postgres (ops commands then use that one)`;
}
