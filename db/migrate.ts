// Forward-only SQL migrations: db/migrations/NNN_name.sql applied in order, each in its own
// transaction together with its record in kasir_migrations. A checksum refuses an applied file
// that was edited later. A session advisory lock serialises concurrent runners (two processes
// starting at once): the second waits, then finds nothing left to do.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { newClient } from './database-hosts.ts';

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url);
// Arbitrary but fixed: the key every Kasir migrator locks on.
const MIGRATION_LOCK_KEY = 7_261_004_117;

export interface Migration {
  id: number;
  name: string;
  text: string;
  checksum: string;
}

export async function readMigrations(dir: URL = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{3}_[a-z0-9_]+\.sql$/.test(f)).sort();
  return Promise.all(
    files.map(async (file) => {
      const text = await readFile(new URL(file, dir), 'utf8');
      return {
        id: Number(file.slice(0, 3)),
        name: file.slice(4, -4),
        text,
        checksum: createHash('sha256').update(text).digest('hex'),
      };
    }),
  );
}

/** Applies pending migrations; returns the names applied by this call. */
export async function migrate(url: string, dir: URL = MIGRATIONS_DIR): Promise<string[]> {
  const migrations = await readMigrations(dir);
  // A plain pg client: migration files hold many statements, which slonik refuses by design.
  const client = newClient(url);
  await client.connect();
  try {
    await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(`
      create table if not exists kasir_migrations (
        id integer primary key,
        name text not null,
        checksum text not null,
        applied_at timestamptz not null default now()
      )`);
    const { rows } = await client.query<{ id: number; checksum: string }>('select id, checksum from kasir_migrations');
    const applied = new Map(rows.map((row) => [row.id, row.checksum]));
    const done: string[] = [];
    for (const migration of migrations) {
      const label = `${String(migration.id).padStart(3, '0')}_${migration.name}`;
      const checksum = applied.get(migration.id);
      if (checksum !== undefined) {
        if (checksum !== migration.checksum) throw new Error(`migration ${label} was edited after it was applied (checksum differs)`);
        continue;
      }
      try {
        await client.query('begin');
        await client.query('insert into kasir_migrations (id, name, checksum) values ($1, $2, $3)', [
          migration.id,
          migration.name,
          migration.checksum,
        ]);
        await client.query(migration.text);
        await client.query('commit');
      } catch (err) {
        await client.query('rollback');
        throw new Error(`migration ${label} failed: ${(err as Error).message}`, { cause: err });
      }
      done.push(label);
    }
    return done;
  } finally {
    // Closing the session releases the advisory lock too, even if unlock is never reached.
    await client.end();
  }
}

/**
 * Everything a database needs before Kasir's processes start: Kasir's migrations, then
 * pg-boss's own schema and every queue (pg-boss migrates itself under its own lock).
 */
export async function prepareDatabase(url: string): Promise<string[]> {
  const applied = await migrate(url);
  const { startBoss } = await import('./queue.ts');
  const boss = await startBoss(url, { role: 'sender', poolSize: 2 });
  await boss.stop({ graceful: false });
  await tuneJobTable(url);
  return applied;
}

/**
 * The job table swings from empty to thousands of rows in a burst. With Postgres's default
 * thresholds its statistics stay those of the empty table for a while, and pg-boss's fetch and
 * completion then scan every row of the queue instead of using its indexes (measured: 1-2k
 * instead of 8-10k jobs/s, docs/performance.md). Analyze it after every 1% change instead.
 */
async function tuneJobTable(url: string): Promise<void> {
  const client = newClient(url);
  await client.connect();
  try {
    await client.query(`
      alter table pgboss.job_common set (
        autovacuum_analyze_scale_factor = 0.01, autovacuum_analyze_threshold = 500,
        autovacuum_vacuum_scale_factor = 0.05, autovacuum_vacuum_threshold = 1000)`);
  } finally {
    await client.end();
  }
}
