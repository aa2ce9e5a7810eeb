// A throwaway bench cluster with pg_stat_statements loaded, for benches that count statements
// (`--stats`). Like scripts/bench/database.ts's default cluster, except that the extension must
// be in shared_preload_libraries, which takes a server restart: the cluster is made persistent
// (so it survives the restart), configured with ALTER SYSTEM, restarted, and removed at release.
// With --ephemeral (durable: false), fsync, synchronous_commit and full_page_writes are turned
// off as the ephemeral cluster does, so figures compare with the runs without --stats.
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import pg from 'pg';
import { prepareDatabase } from '../../db/migrate.ts';
import { ensureDatabase, newPassword, startCluster, type Cluster } from '../lib/cluster.ts';
import type { BenchDatabase } from './database.ts';

/**
 * `explainMs`: also load auto_explain and log the plan of every statement slower than that
 * (as it was executed: prepared statements with their generic or custom plan) to a log file of
 * the server's log, which is also appended to `logFile` of the result, read by benches that
 * report plans (--explain).
 */
export async function statsDatabase(options: { durable?: boolean; explainMs?: number } = {}): Promise<BenchDatabase & { logFile: string | null }> {
  if (process.env.DATABASE_URL) throw new Error('--stats starts its own cluster: unset DATABASE_URL');
  let cluster: Cluster | null = null;
  const dir = await mkdtemp(`${tmpdir()}/kasir-bench-stats-`);
  let releasing: Promise<void> | null = null;
  const release = () =>
    (releasing ??= (async () => {
      await cluster?.stop();
      if (!process.env.BENCH_KEEP_DIR) await rm(dir, { recursive: true, force: true });
    })());
  const onSignal = () => void release().finally(() => process.exit(130));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    await chmod(dir, 0o755); // the postgres user must traverse it when running as root
    const password = newPassword();
    cluster = await startCluster({ dataDir: `${dir}/pg`, password, ephemeral: false });
    const explain = options.explainMs !== undefined;
    const settings = [
      `shared_preload_libraries = ${explain ? 'pg_stat_statements, auto_explain' : 'pg_stat_statements'}`,
      "pg_stat_statements.track = 'top'",
      'pg_stat_statements.track_planning = on',
      ...(explain
        ? [`auto_explain.log_min_duration = ${options.explainMs}`, "auto_explain.log_format = 'text'"]
        : []),
    ];
    if (!options.durable) settings.push('fsync = off', 'synchronous_commit = off', 'full_page_writes = off');
    const admin = new pg.Client({ connectionString: cluster.url('postgres') });
    await admin.connect();
    for (const setting of settings) await admin.query(`alter system set ${setting}`);
    await admin.end();
    await cluster.stop();
    cluster = await startCluster({ dataDir: `${dir}/pg`, password, ephemeral: false, logFile: explain ? `${dir}/postgres.log` : undefined });
    const url = await ensureDatabase(cluster, 'kasir_bench');
    await prepareDatabase(url);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query('create extension if not exists pg_stat_statements');
      const { rows } = await client.query<{ name: string; setting: string }>(
        `select name, setting from pg_settings where name in ('fsync', 'synchronous_commit', 'server_version')`,
      );
      const get = (name: string) => rows.find((r) => r.name === name)?.setting ?? '?';
      return {
        url,
        source: `embedded, ${options.durable ? 'durable' : 'ephemeral'}, pg_stat_statements`,
        settings: { fsync: get('fsync'), synchronous_commit: get('synchronous_commit'), server_version: get('server_version') },
        release,
        logFile: explain ? `${dir}/postgres.log` : null,
      };
    } finally {
      await client.end();
    }
  } catch (err) {
    await release();
    throw err;
  }
}
