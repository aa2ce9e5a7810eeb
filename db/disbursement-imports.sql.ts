// One function per statement for CSV imports: the import record (disbursement_imports) and the
// set-based forms of the disbursement statements the import needs (the bulk insert writes the
// very columns and first event that insertDisbursement writes for one).
import { z } from 'zod';
import { sql, type Db } from './pool.ts';
import { disbursementStatus, type NewDisbursement } from './disbursements.sql.ts';

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
}

export function insertImport(db: Db, i: NewImport) {
  return db.query(sql.unsafe`
    insert into disbursement_imports (id, merchant_id, idempotency_prefix, file_name, file_sha256, file_bytes, row_count,
                                      accepted_count, already_imported_count, refused_count, skipped_count, total_debit)
    values (${i.id}, ${i.merchantId}, ${i.prefix}, ${i.fileName}, ${i.fileSha256}, ${i.fileBytes}, ${i.rows},
            ${i.accepted}, ${i.alreadyImported}, ${i.refused}, ${i.skipped}, ${i.totalDebit})`);
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
 * newest-first list shows the file bottom-up). The caller holds the wallet lock and knows every
 * key is new: a used one violates disbursements_merchant_idempotency_key and aborts.
 */
export function insertImportedDisbursements(
  db: Db,
  d: { merchantId: string; importId: string; source: string; eventSource: string },
  rows: readonly Omit<NewDisbursement, 'merchantId' | 'api' | 'source' | 'beneficiaryId'>[],
) {
  return db.query(sql.unsafe`
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
      returning id, status
    )
    insert into disbursement_events (disbursement_id, status, event, source)
    select id, status, 'disbursement.created', ${d.eventSource} from inserted`);
}
