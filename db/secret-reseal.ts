// Rewrites every sealed value that is not sealed the current way (db/secrets.ts: version 3
// under the current master key) as one that is: values from before binding (1), from before
// key ids (2), and values under a previous key during a master-key rotation. Run by
// `ops secrets:reseal`, as often as wanted: a value already current is not touched, and a run
// killed midway leaves every value openable and the next run picks up what is left.
//
// Why a sweep and not an upgrade on read: the reads that open secrets (request signatures,
// webhook signing, vendor calls) hold no transaction and should not turn into writes, and a
// merchant that never calls would keep its old value for ever; a sweep finishes, and says so
// (remaining 0), which is when the previous key may be dropped.
//
// A batch is one update statement (one short transaction), and each row in it is a
// compare-and-set on the old ciphertext, so a secret rotated between the read and the write is
// left as the rotation wrote it (current already). updated_at is not touched: the secret did
// not change, only its envelope.
import { z } from 'zod';
import { sql, type Db } from './pool.ts';
import type { SealedColumn, Sealer } from './secrets.ts';

/** Every sealed column, with the primary key it is bound to and that key's type. */
const SEALED: readonly (SealedColumn & { key: string; keyType: string })[] = [
  { table: 'merchants', column: 'webhook_secret_enc', key: 'id', keyType: 'uuid' },
  { table: 'merchants', column: 'legacy_client_secret_enc', key: 'id', keyType: 'uuid' },
  { table: 'vendors', column: 'credentials_enc', key: 'code', keyType: 'text' },
];

// Rows per batch: bounded memory, and each update holds its row locks for milliseconds.
const BATCH = 500;

type Sealed = (typeof SEALED)[number];

/** Values of column c that are not version 3 under the key id `current`. */
function notCurrent(c: Sealed, current: Buffer) {
  const column = sql.identifier([c.column]);
  return sql.fragment`${column} is not null and (get_byte(${column}, 0) <> 3 or substring(${column} from 2 for 4) <> ${sql.binary(current)})`;
}

const staleRow = z.object({ row_id: z.string(), value: z.instanceof(Buffer) });

// Walks the primary key in order (its index), so the whole sweep reads each table once.
function listNotCurrent(db: Db, c: Sealed, current: Buffer, after: string | null) {
  const key = sql.identifier([c.key]);
  return db.any(sql.type(staleRow)`
    select ${key}::text as row_id, ${sql.identifier([c.column])} as value
    from ${sql.identifier([c.table])}
    where ${notCurrent(c, current)}
      ${after === null ? sql.fragment`` : sql.fragment`and ${key} > ${after}::${sql.identifier([c.keyType])}`}
    order by ${key}
    limit ${BATCH}`);
}

const replaceSealedRow = z.object({ row_id: z.string() });

function replaceSealed(db: Db, c: Sealed, rows: { rowId: string; old: Buffer; next: Buffer }[]) {
  const table = sql.identifier([c.table]);
  const key = sql.identifier([c.key]);
  const column = sql.identifier([c.column]);
  // Rows are locked in key order first (a fixed order), so two runs, or a run and another
  // transaction locking several of these rows in order, cannot deadlock.
  return db.anyFirst(sql.type(replaceSealedRow)`
    with batch as (
      select * from ${sql.unnest(rows.map((r) => [r.rowId, r.old.toString('hex'), r.next.toString('hex')]), [c.keyType, 'text', 'text'])}
        as b(row_id, old_hex, next_hex)
    ), locked as (
      select t.${key} from ${table} t join batch on t.${key} = batch.row_id
      order by t.${key}
      for update of t
    )
    update ${table} t set ${column} = decode(batch.next_hex, 'hex')
    from batch join locked on locked.${key} = batch.row_id
    where t.${key} = batch.row_id and t.${column} = decode(batch.old_hex, 'hex')
    returning t.${key}::text as row_id`);
}

export interface ResealReport {
  /** Per table.column: values rewritten under the current key. */
  resealed: Record<string, number>;
  /** Values that did not open (a key not configured, or altered): left as they are, named here. */
  failed: { table: string; column: string; row_id: string; error: string }[];
}

export async function resealAll(db: Db, sealer: Sealer): Promise<ResealReport> {
  const current = Buffer.from(sealer.keyId, 'hex');
  const report: ResealReport = { resealed: {}, failed: [] };
  for (const c of SEALED) {
    const name = `${c.table}.${c.column}`;
    report.resealed[name] = 0;
    let after: string | null = null;
    for (;;) {
      const rows = await listNotCurrent(db, c, current, after);
      const rewrites = [];
      for (const row of rows) {
        const place = { ...c, rowId: row.row_id };
        try {
          rewrites.push({ rowId: row.row_id, old: row.value, next: sealer.seal(sealer.open(row.value, place), place) });
        } catch (err) {
          report.failed.push({ table: c.table, column: c.column, row_id: row.row_id, error: (err as Error).message });
        }
      }
      if (rewrites.length) report.resealed[name] += (await replaceSealed(db, c, rewrites)).length;
      if (rows.length < BATCH) break;
      after = rows[rows.length - 1].row_id;
    }
  }
  return report;
}

export interface SealedCounts {
  /** Values not version 3 under the current key: 0 once the previous key may be dropped. */
  remaining: number;
  /** Of those: from before binding (KASIR_SEALED_REQUIRE_BOUND refuses these). */
  unbound: number;
  /** Of those: bound, from before key ids (under whichever configured key opens them). */
  without_key_id: number;
  /** Of those: per key id other than the current one. */
  under_key: Record<string, number>;
  /** Values already current. */
  current: number;
}

const countRow = z.object({ version: z.number(), key_id: z.string().nullable(), n: z.number() });

/** How the sealed values stand, by format and key id; read only. */
export async function countSealed(db: Db, currentKeyId: string): Promise<SealedCounts> {
  const counts: SealedCounts = { remaining: 0, unbound: 0, without_key_id: 0, under_key: {}, current: 0 };
  for (const c of SEALED) {
    const column = sql.identifier([c.column]);
    const rows = await db.any(sql.type(countRow)`
      select get_byte(${column}, 0) as version,
             case when get_byte(${column}, 0) = 3 then encode(substring(${column} from 2 for 4), 'hex') end as key_id,
             count(*)::int as n
      from ${sql.identifier([c.table])}
      where ${column} is not null
      group by 1, 2`);
    for (const row of rows) {
      if (row.version === 3 && row.key_id === currentKeyId) {
        counts.current += row.n;
        continue;
      }
      counts.remaining += row.n;
      if (row.version === 1) counts.unbound += row.n;
      else if (row.version === 2) counts.without_key_id += row.n;
      else if (row.key_id) counts.under_key[row.key_id] = (counts.under_key[row.key_id] ?? 0) + row.n;
    }
  }
  return counts;
}
