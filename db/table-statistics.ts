// Fresh planner statistics for the tables a burst fills (the scheduler's statistics sweep,
// workers/statistics-sweep.ts). Autovacuum analyzes a table once a tenth of it has changed,
// but looks at most once a minute (autovacuum_naptime), and a flash sale changes the tables
// within seconds: 20,000 orders made through the API left pg-boss's job table analyzed while it
// held only order-create jobs, so when their 20,000 order.expired webhooks were queued the
// planner took webhook-deliver for one row, and every fetch walked the queue's whole primary
// key (a nested loop on job_common_pkey by name alone): 397 deliveries a second instead of
// 1,600 (docs/performance.md, Webhooks). Statistics that lag a burst by seconds instead of a
// minute keep the plans the data calls for.
//
// The same rule as autovacuum's (50 rows + 10 % changed since the last analyze), checked every
// few seconds, on the ordinary tables of Kasir's and pg-boss's schemas. ANALYZE reads a sample
// (30,000 rows at the default statistics target), so a pass costs tens of milliseconds
// whatever a table's size. A role that may not analyze a table (not its owner; MAINTAIN from
// PostgreSQL 17) gets a warning from Postgres and nothing happens: docs/app-role.sql grants it.
import { z } from 'zod';
import { sql, type Db } from './pool.ts';

/** At most this many tables a pass: a pass stays short even after a long pause. */
const TABLES_PER_PASS = 3;

const staleRow = z.object({ schema: z.string(), name: z.string(), changed: z.number(), rows: z.number() });
export type StaleTable = z.infer<typeof staleRow>;

/** The tables whose statistics autovacuum would refresh now, most changed first. */
export function staleTables(db: Db): Promise<readonly StaleTable[]> {
  return db.any(sql.type(staleRow)`
    select s.schemaname as schema, s.relname as name, s.n_mod_since_analyze::int8 as changed, greatest(c.reltuples, 0)::int8 as rows
    from pg_stat_user_tables s
    join pg_class c on c.oid = s.relid
    where s.schemaname in (current_schema(), 'pgboss')
      and c.relkind = 'r'
      and s.n_mod_since_analyze > 50 + 0.1 * greatest(c.reltuples, 0)
    order by s.n_mod_since_analyze::float8 / greatest(c.reltuples, 1) desc
    limit ${TABLES_PER_PASS}`);
}

export async function analyzeTable(db: Db, table: Pick<StaleTable, 'schema' | 'name'>): Promise<void> {
  await db.query(sql.unsafe`analyze ${sql.identifier([table.schema, table.name])}`);
}
