// Whose word moves a record. Every order, payout and refund records the vendor that holds it,
// and a vendor's word (a callback, or what it answers when asked) is applied only to records
// that vendor holds: one vendor's credential never moves another vendor's money. A word that is
// not the holder's, and a final word that contradicts Kasir's final state, are recorded in
// vendor_conflicts (ops vendor:conflicts), logged and counted, in the transaction that declined
// them, and change nothing else.
//
// The application functions (applyPayment, completeDisbursement, completeSettlement,
// completeRefund) take a Speaker and check it with vendorHolds on the locked row, so callbacks
// and reconciliation go through the same rule.
import { z } from 'zod';
import { logger } from './logger.ts';
import { afterCommit, observeVendorConflict } from './metrics.ts';
import { sql, type Db } from './pool.ts';

/**
 * Who says so: a vendor (its word applies only to what it holds; `via` says how it came:
 * callback, reconcile, vendor for a call's own answer), or Kasir itself (an operator, a worker
 * with no vendor left), whose decisions are not bound to any vendor.
 */
export type Speaker = { vendor: string; via: string; eventId?: string } | { kasir: string };

/** The event source a change is recorded under: `callback:<code>`, `reconcile:<code>`, `operator`, ... */
export function sourceOf(speaker: Speaker): string {
  return 'vendor' in speaker ? `${speaker.via}:${speaker.vendor}` : speaker.kasir;
}

export type RecordType = 'ORDER' | 'DISBURSEMENT' | 'SETTLEMENT' | 'REFUND';

/** What decides who holds a record, as its row has it. */
export type HeldRecord =
  | { type: 'ORDER'; status: string; vendor_code: string | null; pending_vendor: string | null; vendors_tried: readonly string[] }
  | { type: 'DISBURSEMENT' | 'SETTLEMENT' | 'REFUND'; vendor_code: string | null }
  /** An earlier attempt of a retried settlement payout: the vendors its reference went to. */
  | { type: 'SETTLEMENT'; earlier_attempt_vendors: readonly string[] };

/**
 * The vendors whose word may move a record:
 * - an order still CREATING: the vendor its create call is pending at (none between vendors);
 * - an order Kasir gave up on (FAILED): any vendor it asked for a QR, since a QR that was made
 *   anyway can be paid, and money received is never dropped;
 * - an earlier attempt of a settlement payout (retried under a new reference): the vendors that
 *   attempt's reference was sent to (none known for attempts sent before Kasir kept them);
 * - any other order, payout or refund: the vendor recorded on it.
 */
export function holdersOf(record: HeldRecord): readonly string[] {
  if ('earlier_attempt_vendors' in record) return record.earlier_attempt_vendors;
  if (record.type === 'ORDER') {
    if (record.status === 'CREATING') return record.pending_vendor ? [record.pending_vendor] : [];
    if (record.status === 'FAILED') return record.vendors_tried;
  }
  return record.vendor_code ? [record.vendor_code] : [];
}

/** The binding rule, in one place: may `vendorCode`'s word move `record`? */
export function vendorHolds(vendorCode: string, record: HeldRecord): boolean {
  return holdersOf(record).includes(vendorCode);
}

export interface Conflict {
  /** UNCONFIRMED: a payment callback that is only a hint, which the vendor's own read did not confirm (api/payment-hints.ts). */
  kind: 'NOT_ITS_RECORD' | 'CONTRADICTION' | 'UNCONFIRMED';
  vendorCode: string;
  recordType: RecordType;
  recordId: string;
  reference: string;
  /** The record's holder when the word came (null: none). */
  recordVendor: string | null;
  kasirStatus: string;
  vendorStatus: string;
  source: string;
  eventId?: string | null;
  detail?: Record<string, unknown>;
}

/** Records a declined word, with its warning and metric once the transaction commits. */
export async function recordConflict(tx: Db, c: Conflict): Promise<void> {
  await tx.query(sql.unsafe`
    insert into vendor_conflicts (kind, vendor_code, record_type, record_id, reference, record_vendor, kasir_status, vendor_status, source, event_id, detail)
    values (${c.kind}, ${c.vendorCode}, ${c.recordType}, ${c.recordId}, ${c.reference}, ${c.recordVendor}, ${c.kasirStatus}, ${c.vendorStatus},
            ${c.source}, ${c.eventId ?? null}, ${sql.jsonb((c.detail ?? {}) as never)})`);
  afterCommit(tx, () => {
    observeVendorConflict(c.vendorCode, c.kind);
    const what = {
      NOT_ITS_RECORD: "a vendor's word on a record another vendor holds: not applied",
      CONTRADICTION: "a vendor's final word contradicts Kasir's: not applied",
      UNCONFIRMED: "a payment callback the vendor's own read of the order's QR does not confirm: not applied",
    }[c.kind];
    logger.warn(
      { kind: c.kind, vendor: c.vendorCode, record: c.recordType, reference: c.reference, recordVendor: c.recordVendor, kasirStatus: c.kasirStatus, vendorStatus: c.vendorStatus, source: c.source },
      what,
    );
  });
}

/**
 * Checks `speaker` against a locked record: true when it may move it (Kasir itself, or the
 * vendor holding it). Otherwise records the word as NOT_ITS_RECORD and returns false.
 */
export async function boundToHolder(
  tx: Db,
  speaker: Speaker,
  record: HeldRecord,
  word: Word,
): Promise<boolean> {
  if (!('vendor' in speaker) || vendorHolds(speaker.vendor, record)) return true;
  await recordWord(tx, 'NOT_ITS_RECORD', speaker, record, word);
  return false;
}

/** Records a vendor's word that was not applied, with the record's holders as Kasir has them. */
function recordWord(tx: Db, kind: Conflict['kind'], speaker: Extract<Speaker, { vendor: string }>, record: HeldRecord, word: Word): Promise<void> {
  const holders = holdersOf(record);
  return recordConflict(tx, {
    kind,
    vendorCode: speaker.vendor,
    recordType: record.type,
    recordVendor: holders.length ? holders.join(',') : null,
    source: sourceOf(speaker),
    eventId: speaker.eventId ?? null,
    ...word,
  });
}

/** What a vendor said about a record, as a conflict records it. */
export interface Word {
  recordId: string;
  reference: string;
  kasirStatus: string;
  vendorStatus: string;
  detail?: Record<string, unknown>;
}

/**
 * A vendor's final word on a record Kasir already holds final: recorded as a CONTRADICTION when
 * it says the opposite (`contradicts`), so the operator finds where money may have moved.
 * Returns whether it did. Kasir's own decisions are never contradictions.
 */
export async function noteFinalWord(tx: Db, speaker: Speaker, record: HeldRecord, word: Word, contradicts: boolean): Promise<boolean> {
  if (!('vendor' in speaker) || !contradicts) return false;
  await recordWord(tx, 'CONTRADICTION', speaker, record, word);
  return true;
}

const conflictRow = z.object({
  id: z.number(),
  kind: z.string(),
  vendor_code: z.string(),
  record_type: z.string(),
  record_id: z.string(),
  reference: z.string(),
  record_vendor: z.string().nullable(),
  kasir_status: z.string(),
  vendor_status: z.string(),
  source: z.string(),
  event_id: z.string().nullable(),
  detail: z.record(z.string(), z.unknown()),
  created_at: z.date(),
});
export type ConflictRow = z.infer<typeof conflictRow>;

/** Recorded conflicts, newest first. */
export function listConflicts(db: Db, filter: { kind?: Conflict['kind']; vendorCode?: string; since?: Date; limit: number }) {
  return db.any(sql.type(conflictRow)`
    select id, kind, vendor_code, record_type, record_id, reference, record_vendor, kasir_status, vendor_status, source, event_id, detail, created_at
    from vendor_conflicts
    where true
      ${filter.kind ? sql.fragment`and kind = ${filter.kind}` : sql.fragment``}
      ${filter.vendorCode ? sql.fragment`and vendor_code = ${filter.vendorCode}` : sql.fragment``}
      ${filter.since ? sql.fragment`and created_at >= ${filter.since.toISOString()}` : sql.fragment``}
    order by created_at desc, id desc
    limit ${filter.limit}`);
}
