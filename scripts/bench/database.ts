// The database a bench runs against, shared by every bench module.
//   DATABASE_URL set   → that server, migrated (the bench's rows stay behind in it).
//   default            → a throwaway embedded cluster in a temp dir with Postgres's durable
//                        defaults, as `npm start` runs its own: every commit waits for its WAL
//                        flush, so the figures are what a user's installation gives.
//   --ephemeral        → the same throwaway cluster started like scripts/test.ts does: fsync,
//                        synchronous_commit and full_page_writes off. Commits never wait for the
//                        disk; for comparing with older figures, and seeing what the flushes cost.
//   --durable          → the default, named (older command lines keep working).
// The server's actual fsync/synchronous_commit settings are read back and reported, so a figure
// is never quoted without knowing which of these it came from.
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os, { tmpdir } from 'node:os';
import pg from 'pg';
import { prepareDatabase } from '../../db/migrate.ts';
import { ensureDatabase, newPassword, startCluster, type Cluster } from '../lib/cluster.ts';

export interface BenchDatabase {
  url: string;
  /** 'DATABASE_URL', 'embedded, ephemeral' or 'embedded, durable'. */
  source: string;
  settings: { fsync: string; synchronous_commit: string; server_version: string };
  release(): Promise<void>;
}

/** parseArgs options every bench takes for its database. */
export const databaseOptions = {
  ephemeral: { type: 'boolean', default: false },
  durable: { type: 'boolean', default: false },
} as const;

/** Whether the flags ask for a durable database (the default); both at once is a usage error. */
export function durableFrom(values: { ephemeral?: boolean; durable?: boolean }): boolean {
  if (values.ephemeral && values.durable) {
    throw Object.assign(new Error('--ephemeral and --durable contradict each other'), { code: 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' });
  }
  return !values.ephemeral;
}

/** The report's note on a database that is not durable. */
export function durabilityNote(database: { fsync: string; synchronous_commit: string }): string {
  const durable = database.fsync === 'on' && database.synchronous_commit !== 'off';
  return durable ? '  (durable: the default)' : '  (NOT durable: commits skip the disk flush; --ephemeral)';
}

export async function benchDatabase(options: { durable?: boolean } = {}): Promise<BenchDatabase> {
  let cluster: Cluster | null = null;
  let dir: string | null = null;
  let url = process.env.DATABASE_URL;
  let source = 'DATABASE_URL';

  // One cleanup, however many callers: a Ctrl-C and the caller's own finally block may both ask,
  // and whichever exits the process must wait for the same stop + rm.
  let releasing: Promise<void> | null = null;
  const release = () =>
    (releasing ??= (async () => {
      await cluster?.stop();
      if (dir && !process.env.BENCH_KEEP_DIR) await rm(dir, { recursive: true, force: true });
    })());
  // Ctrl-C: the cluster runs detached (it does not get the terminal's SIGINT), so stop it and
  // remove its directory here; exit 130 once done, whatever the interrupted code does meanwhile.
  // (Children spawned with IPC stop by themselves when this process goes.)
  const onSignal = () => void release().finally(() => process.exit(130));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  if (url && options.durable === false) process.stderr.write('--ephemeral ignored: DATABASE_URL is set, its server settings apply\n');
  try {
    if (!url) {
      dir = await mkdtemp(`${tmpdir()}/kasir-bench-`);
      await chmod(dir, 0o755); // the postgres user must traverse it when running as root
      cluster = await startCluster({ dataDir: `${dir}/pg`, password: newPassword(), ephemeral: !options.durable });
      url = await ensureDatabase(cluster, 'kasir_bench');
      source = options.durable ? 'embedded, durable' : 'embedded, ephemeral';
    }
    await prepareDatabase(url);
    return { url, source, settings: await readSettings(url), release };
  } catch (err) {
    await release();
    throw err;
  }
}

async function readSettings(url: string): Promise<BenchDatabase['settings']> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string; setting: string }>(
      `select name, setting from pg_settings where name in ('fsync', 'synchronous_commit', 'server_version')`,
    );
    const get = (name: string) => rows.find((r) => r.name === name)?.setting ?? '?';
    return { fsync: get('fsync'), synchronous_commit: get('synchronous_commit'), server_version: get('server_version') };
  } finally {
    await client.end();
  }
}

/** The machine and database facts every bench report opens with: figures compare only within a run. */
export function runFacts(db: BenchDatabase, loadBefore: number) {
  return {
    machine: {
      cores: os.availableParallelism(),
      load_before: loadBefore,
      load_after: Number(os.loadavg()[0].toFixed(2)),
      node: process.version,
      postgres: db.settings.server_version,
    },
    database: { source: db.source, fsync: db.settings.fsync, synchronous_commit: db.settings.synchronous_commit },
  };
}
