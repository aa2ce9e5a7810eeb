// Issue 36: npm start's embedded Postgres never shows its superuser password on a command line,
// which every local user can read (ps, /proc/<pid>/cmdline): the cluster's processes, initdb
// and postgres included, are looked at while it runs.
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { newPassword, startCluster } from '../../scripts/lib/cluster.ts';

/** Every process's command line this user can read, as ps shows it. */
function commandLines(): string[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .flatMap((pid) => {
      try {
        return [readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ')];
      } catch {
        return [];
      }
    });
}

t.test('the superuser password is on no command line', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'kasir-pw-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const password = newPassword();
  const cluster = await startCluster({ dataDir, password, ephemeral: true });
  t.teardown(() => cluster.stop());
  const lines = commandLines();
  t.ok(lines.some((line) => line.includes(dataDir)), 'the cluster\'s processes are listed');
  t.same(lines.filter((line) => line.includes(password)), [], 'no command line holds the password');
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: cluster.url() });
  await client.connect();
  t.teardown(() => client.end());
  t.equal((await client.query('select 1 as one')).rows[0].one, 1, 'the password still opens the cluster');
});
