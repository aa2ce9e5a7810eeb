// A cancelled settlement lets go of its orders and refunds by the settlement's id
// (releaseSettlement, db/settlements.sql.ts). At a year of data those tables hold millions of
// rows of every merchant, so each of its three updates must find its rows through an index
// (migration 108), never by reading the table. The plans are read with sequential scans
// disabled: where an index can serve the statement the planner takes it, where none can it still
// scans the table (a test database is too small for costs to decide).
import t from 'tap';
import pg from 'pg';
import { testDatabase } from '../helpers/db.ts';

const url = await testDatabase(t);
const client = new pg.Client({ connectionString: url });
await client.connect();
t.teardown(() => client.end());

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}
const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];

async function plan(text: string): Promise<PlanNode[]> {
  await client.query('begin');
  try {
    await client.query('set local enable_seqscan = off');
    const { rows } = await client.query(`explain (format json) ${text}`, ['00000000-0000-0000-0000-000000000001']);
    return nodes((rows[0] as { 'QUERY PLAN': [{ Plan: PlanNode }] })['QUERY PLAN'][0].Plan);
  } finally {
    await client.query('rollback');
  }
}

for (const [table, column, index] of [
  ['orders', 'settlement_id', 'orders_settlement_idx'],
  ['refunds', 'settlement_id', 'refunds_settlement_idx'],
  ['refunds', 'reversal_settlement_id', 'refunds_reversal_settlement_idx'],
] as const) {
  t.test(`a cancel finds ${table} by ${column} through an index`, async (t) => {
    const found = await plan(`update ${table} set ${column} = null where ${column} = $1`);
    t.same(found.filter((n) => n['Node Type'] === 'Seq Scan').map((n) => n['Relation Name']), [], 'no table read whole');
    t.ok(found.some((n) => n['Index Name'] === index), `${index} serves it`);
  });
}
