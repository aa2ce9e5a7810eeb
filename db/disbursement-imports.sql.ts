// One function per statement for CSV imports: the import record (disbursement_imports) and the
// set-based forms of the disbursement statements the import needs (the bulk insert writes the
// very columns and first event that insertDisbursement writes for one).
import { z } from 'zod';
import { sql, type Db } from './pool.ts';
import { disbursementStatus, type NewDisbursement } from './disbursements.sql.ts';
import { role, type Role } from './users.sql.ts';
import { countRow } from './row-shapes.ts';

export interface NewImport {
  id: string;
  merchantId: string;
  prefix: string;
  fileName: string | null;
  fileSha256: string;
  fileBytes: number;
  rows: number;
  accepted: number;
  alreadyImported: number;
  refused: number;
  skipped: number;
  totalDebit: number;
  /** The team user whose key uploaded the file (null: the merchant's own key), and the role it acted with. */
  uploadedBy: { userId: string | null; role: Role };
}

export function insertImport(db: Db, i: NewImport) {
  return db.query(sql.unsafe`
    insert into disbursement_imports (id, merchant_id, idempotency_prefix, file_name, file_sha256, file_bytes, row_count,
                                      accepted_count, already_imported_count, refused_count, skipped_count, total_debit,
                                      uploaded_by_user_id, uploaded_by_role)
    values (${i.id}, ${i.merchantId}, ${i.prefix}, ${i.fileName}, ${i.fileSha256}, ${i.fileBytes}, ${i.rows},
            ${i.accepted}, ${i.alreadyImported}, ${i.refused}, ${i.skipped}, ${i.totalDebit},
            ${i.uploadedBy.userId}, ${i.uploadedBy.role})`);
}

export interface Refusal {
  row: number;
  key: string;
  code: string;
  message: string;
}

/** Records refused rows of one import, set-based (the caller passes at most a chunk). */
export function insertRefusals(db: Db, importId: string, refusals: readonly Refusal[]) {
  return db.query(sql.unsafe`
    insert into disbursement_import_refusals (import_id, row_number, idempotency_key, code, message)
    select ${importId}, r.row_number, r.idempotency_key, r.code, r.message
    from ${sql.unnest(refusals.map((r) => [r.row, r.key, r.code, r.message]), ['int4', 'text', 'text', 'text'])}
      as r(row_number, idempotency_key, code, message)`);
}

export const importRow = z.object({
  id: z.string(),
  idempotency_prefix: z.string(),
  file_name: z.string().nullable(),
  file_sha256: z.string(),
  file_bytes: z.number(),
  row_count: z.number(),
  accepted_count: z.number(),
  already_imported_count: z.number(),
  refused_count: z.number(),
  skipped_count: z.number(),
  total_debit: z.number(),
  uploaded_by_user_id: z.string().nullable(),
  /** The user's name as it is now (a removed user's row stays, so the name does too). */
  uploaded_by_name: z.string().nullable(),
  /** Null for imports recorded before uploaders were (migration 019). */
  uploaded_by_role: role.nullable(),
  created_at: z.date(),
});
export type ImportRecord = z.infer<typeof importRow>;

const importColumns = sql.fragment`
  i.id, i.idempotency_prefix, i.file_name, i.file_sha256, i.file_bytes, i.row_count, i.accepted_count,
  i.already_imported_count, i.refused_count, i.skipped_count, i.total_debit, i.uploaded_by_user_id,
  u.full_name as uploaded_by_name, i.uploaded_by_role, i.created_at`;

/** A page of the merchant's imports, newest first (disbursement_imports_merchant_idx), and their count. */
export function listMerchantImports(db: Db, merchantId: string, page: number, limit: number) {
  return Promise.all([
    db.any(sql.type(importRow)`
      select ${importColumns}
      from disbursement_imports i left join merchant_users u on u.id = i.uploaded_by_user_id
      where i.merchant_id = ${merchantId}
      order by i.created_at desc, i.id desc
      limit ${limit} offset ${(page - 1) * limit}`),
    db.oneFirst(sql.type(countRow)`select count(*)::int as n from disbursement_imports where merchant_id = ${merchantId}`),
  ]);
}

/** One import of the merchant; another merchant's is null like a missing one. */
export function findMerchantImport(db: Db, merchantId: string, id: string) {
  return db.maybeOne(sql.type(importRow)`
    select ${importColumns}
    from disbursement_imports i left join merchant_users u on u.id = i.uploaded_by_user_id
    where i.id = ${id} and i.merchant_id = ${merchantId}`);
}

const refusalRow = z.object({ row_number: z.number(), idempotency_key: z.string(), code: z.string(), message: z.string() });
export type RefusalRow = z.infer<typeof refusalRow>;

/** An import's refused rows in file order (its primary key). */
export function listImportRefusals(db: Db, importId: string) {
  return db.any(sql.type(refusalRow)`
    select row_number, idempotency_key, code, message from disbursement_import_refusals
    where import_id = ${importId} order by row_number`);
}

export const existingDisbursement = z.object({
  id: z.string(),
  ref_code: z.string(),
  idempotency_key: z.string(),
  status: disbursementStatus,
  channel: z.enum(['BANK', 'EWALLET']),
  bank_short_code: z.string().nullable(),
  account_number: z.string().nullable(),
  account_name: z.string().nullable(),
  ewallet_provider: z.string().nullable(),
  ewallet_phone: z.string().nullable(),
  request_amount: z.number(),
  total_debit: z.number(),
});
export type ExistingDisbursement = z.infer<typeof existingDisbursement>;

/**
 * The merchant's disbursements holding any of these idempotency keys: one probe of the unique
 * (merchant_id, idempotency_key) index per key. (`idempotency_key = any($2)` under a generic
 * plan compares every row of the merchant with every key: seconds for a large file.)
 */
export function findByIdempotencyKeys(db: Db, merchantId: string, keys: readonly string[]) {
  return db.any(sql.type(existingDisbursement)`
    select d.id, d.ref_code, d.idempotency_key, d.status, d.channel, d.bank_short_code, d.account_number, d.account_name,
           d.ewallet_provider, d.ewallet_phone, d.request_amount, d.total_debit
    from unnest(${sql.array([...keys], 'text')}) as k(key)
    join disbursements d on d.merchant_id = ${merchantId} and d.idempotency_key = k.key`);
}

/**
 * Inserts disbursements of one merchant and one import, each with its first event, dated on
 * the WIB calendar day, in the given order (created_at is the clock at each row, so the
 * newest-first list shows the file bottom-up). Returns the ids inserted: a key the merchant
 * already used is skipped (the unique constraint decides, waiting for a concurrent holder to
 * commit or roll back), so the caller learns which rows another request holds. (The ids are
 * the caller's own UUIDs: read back without a row schema, 100,000 parses spared.)
 */
export function insertImportedDisbursements(
  db: Db,
  d: { merchantId: string; importId: string; source: string; eventSource: string },
  rows: readonly Omit<NewDisbursement, 'merchantId' | 'api' | 'source' | 'beneficiaryId'>[],
) {
  return db.anyFirst(sql.unsafe`
    with inserted as (
      insert into disbursements (id, merchant_id, ref_code, idempotency_key, api, source, channel, bank_id, bank_short_code,
                                 bank_name, account_number, account_name, ewallet_provider, ewallet_phone, request_amount,
                                 fee, total_debit, notify_url, status, wib_date, import_id, created_at)
      select r.id, ${d.merchantId}, r.ref_code, r.idempotency_key, 'V1', ${d.source}, r.channel, r.bank_id, r.bank_short_code,
             r.bank_name, r.account_number, r.account_name, r.ewallet_provider, r.ewallet_phone, r.request_amount,
             r.fee, r.request_amount + r.fee, r.notify_url, r.status, (now() at time zone 'Asia/Jakarta')::date,
             ${d.importId}, clock_timestamp()
      from ${sql.unnest(
        rows.map((r) => [
          r.id, r.refCode, r.idempotencyKey, r.channel, r.bankId, r.bankShortCode, r.bankName, r.accountNumber, r.accountName,
          r.ewalletProvider, r.ewalletPhone, r.requestAmount, r.fee, r.notifyUrl, r.status,
        ]),
        ['uuid', 'text', 'text', 'text', 'uuid', 'text', 'text', 'text', 'text', 'text', 'text', 'int8', 'int8', 'text', 'text'],
      )} with ordinality as r(id, ref_code, idempotency_key, channel, bank_id, bank_short_code, bank_name, account_number,
                              account_name, ewallet_provider, ewallet_phone, request_amount, fee, notify_url, status, n)
      order by r.n
      on conflict (merchant_id, idempotency_key) do nothing
      returning id, status
    ), events as (
      insert into disbursement_events (disbursement_id, status, event, source)
      select id, status, 'disbursement.created', ${d.eventSource} from inserted
    )
    select id from inserted`) as Promise<readonly string[]>;
}

/**
 * Removes disbursements this transaction inserted for an import and has not committed (rows the
 * balance decision no longer accepts), with their events. Nothing else refers to them yet.
 */
export function deleteStagedDisbursements(db: Db, importId: string, ids: readonly string[]) {
  return db.query(sql.unsafe`
    with gone as (
      delete from disbursement_events e using unnest(${sql.array([...ids], 'uuid')}) as k(id)
      where e.disbursement_id = k.id
    )
    delete from disbursements d using unnest(${sql.array([...ids], 'uuid')}) as k(id)
    where d.id = k.id and d.import_id = ${importId}`);
}

/**
 * Runs the checks of deferred constraints now instead of at commit: pg-boss's job → queue
 * foreign key is DEFERRABLE INITIALLY DEFERRED, and 100,000 jobs' checks at commit took ~0.5 s,
 * which the import would spend holding the wallet lock. Later statements check at once.
 */
export function checkDeferredConstraints(db: Db) {
  return db.query(sql.unsafe`set constraints all immediate`);
}

/** Removes an import's refusals of the given rows (their outcome changed before commit). */
export function deleteRefusals(db: Db, importId: string, rows: readonly number[]) {
  return db.query(sql.unsafe`
    delete from disbursement_import_refusals r using unnest(${sql.array([...rows], 'int4')}) as k(row_number)
    where r.import_id = ${importId} and r.row_number = k.row_number`);
}

/** Removes an import's refusals with these codes (the rows refused after a stop that moved). */
export function deleteRefusalsWithCodes(db: Db, importId: string, codes: readonly string[]) {
  return db.query(sql.unsafe`
    delete from disbursement_import_refusals where import_id = ${importId} and code = any(${sql.array([...codes], 'text')})`);
}
