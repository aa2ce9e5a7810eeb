// Rewrites sealed values written before binding (version 1, no additional data) as values
// bound to their row (version 2, db/secrets.ts). Run by `ops secrets:reseal` after deploying
// the binding, and again whenever: it is idempotent, and a value already bound is not touched.
//
// Why a sweep and not an upgrade on read: the reads that open secrets (request signatures,
// webhook signing, vendor calls) hold no transaction and should not turn into writes, and a
// merchant that never calls would keep its unbound value for ever; a sweep finishes, and
// says so (remaining 0).
//
// Each row is rewritten with a compare-and-set on the old ciphertext, so a secret rotated
// between the read and the write is left as the rotation wrote it (and it is bound already).
// updated_at is not touched: the secret did not change, only its envelope.
import { z } from 'zod';
import { sql, type Db } from './pool.ts';
import type { SealedColumn, Sealer } from './secrets.ts';

/** Every sealed column, with the primary key it is bound to. */
const SEALED: readonly (SealedColumn & { key: string })[] = [
  { table: 'merchants', column: 'webhook_secret_enc', key: 'id' },
  { table: 'merchants', column: 'legacy_client_secret_enc', key: 'id' },
  { table: 'vendors', column: 'credentials_enc', key: 'code' },
];

// Rows read per statement: bounded memory however many merchants there are.
const BATCH = 500;

const unboundRow = z.object({ row_id: z.string(), value: z.instanceof(Buffer) });

function listUnbound(db: Db, c: (typeof SEALED)[number], after: string) {
  const key = sql.identifier([c.key]);
  const column = sql.identifier([c.column]);
  return db.any(sql.type(unboundRow)`
    select ${key}::text as row_id, ${column} as value
    from ${sql.identifier([c.table])}
    where ${column} is not null and get_byte(${column}, 0) = 1 and ${key}::text > ${after}
    order by ${key}::text
    limit ${BATCH}`);
}

function replaceSealed(db: Db, c: (typeof SEALED)[number], rowId: string, old: Buffer, next: Buffer) {
  const column = sql.identifier([c.column]);
  return db.maybeOneFirst(sql.type(z.object({ row_id: z.string() }))`
    update ${sql.identifier([c.table])} set ${column} = ${sql.binary(next)}
    where ${sql.identifier([c.key])}::text = ${rowId} and ${column} = ${sql.binary(old)}
    returning ${sql.identifier([c.key])}::text as row_id`);
}

export interface ResealReport {
  /** Per table.column: values rewritten bound. */
  resealed: Record<string, number>;
  /** Values that did not open (another master key, or altered): left as they are, named here. */
  failed: { table: string; column: string; row_id: string; error: string }[];
}

export async function resealUnbound(db: Db, sealer: Sealer): Promise<ResealReport> {
  const report: ResealReport = { resealed: {}, failed: [] };
  for (const c of SEALED) {
    const name = `${c.table}.${c.column}`;
    report.resealed[name] = 0;
    let after = '';
    for (;;) {
      const rows = await listUnbound(db, c, after);
      for (const row of rows) {
        const place = { ...c, rowId: row.row_id };
        let plaintext: string;
        try {
          plaintext = sealer.open(row.value, place);
        } catch (err) {
          report.failed.push({ table: c.table, column: c.column, row_id: row.row_id, error: (err as Error).message });
          continue;
        }
        if (await replaceSealed(db, c, row.row_id, row.value, sealer.seal(plaintext, place))) report.resealed[name]++;
      }
      if (rows.length < BATCH) break;
      after = rows[rows.length - 1].row_id;
    }
  }
  return report;
}

/** How many unbound values remain (0 once every deployment step is done). */
export async function countUnbound(db: Db): Promise<number> {
  let total = 0;
  for (const c of SEALED) {
    const column = sql.identifier([c.column]);
    total += await db.oneFirst(sql.type(z.object({ n: z.number() }))`
      select count(*)::int as n from ${sql.identifier([c.table])} where ${column} is not null and get_byte(${column}, 0) = 1`);
  }
  return total;
}
