// One function per statement on recon_runs and recon_differences, and the reads of Kasir's own
// records a reconciliation compares with a vendor's report (db/recon.ts says what each means).
import { z } from 'zod';
import { sql, type Db } from './pool.ts';
import { codeRow, countRow, idRow } from './row-shapes.ts';

export const reconKind = z.enum(['PAID_AT_VENDOR_ONLY', 'PAID_IN_KASIR_ONLY', 'AMOUNT_DIFFERS', 'STATUS_DIFFERS', 'PAID_TWICE', 'NO_KASIR_RECORD']);
export type ReconKind = z.infer<typeof reconKind>;
export const reconSubject = z.enum(['PAYMENT', 'PAYOUT', 'REFUND']);
export type ReconSubject = z.infer<typeof reconSubject>;
export const differenceStatus = z.enum(['OPEN', 'REPAIRED', 'RESOLVED']);

// ---------------------------------------------------------------- Kasir's records

/**
 * A record of Kasir's as reconciliation reads it: an order (PAYMENT), the reference a payout went
 * out under (PAYOUT: a disbursement, or one attempt of a settlement payout), or a refund.
 * `vendors`: every vendor that was called for it (the current one first when there is one).
 * `raw_status`: the row's status; EARLIER_ATTEMPT for a settlement reference Kasir gave up on
 * (the settlement was retried under a new reference). `at`: when it belongs to a day (paid_at,
 * when the payout reference was recorded, when the refund was made).
 */
export const kasirRow = z.object({
  subject: reconSubject,
  reference: z.string(),
  id: z.string(),
  merchant_id: z.string(),
  vendor_code: z.string().nullable(),
  vendors: z.array(z.string()),
  vendor_id: z.string().nullable(),
  amount: z.number(),
  raw_status: z.string(),
  at: z.date().nullable(),
  payout_kind: z.enum(['DISBURSEMENT', 'SETTLEMENT']).nullable(),
  order_reference: z.string().nullable(),
});
export type KasirRow = z.infer<typeof kasirRow>;

type Fragment = ReturnType<typeof sql.fragment>;

const orders = (where: Fragment) => sql.fragment`
  select 'PAYMENT' as subject, o.ref_code as reference, o.id, o.merchant_id, o.vendor_code,
         array_remove(array[o.vendor_code, o.pending_vendor], null) || o.vendors_tried as vendors,
         o.vendor_order_id as vendor_id, o.amount, o.status as raw_status, o.paid_at as at,
         null::text as payout_kind, null::text as order_reference
  from orders o where ${where}`;

const disbursementPayouts = (where: Fragment) => sql.fragment`
  select 'PAYOUT', pr.reference, d.id, d.merchant_id, d.vendor_code,
         array_remove(array[d.vendor_code], null) || d.vendors_tried, d.vendor_disbursement_id, d.request_amount, d.status,
         pr.created_at, 'DISBURSEMENT', null::text
  from payout_references pr join disbursements d on d.id = pr.payout_id
  where pr.kind = 'DISBURSEMENT' and ${where}`;

// The reference of a settlement's current attempt: <ref_code>, then <ref_code>-<n> (db/settlements.ts).
const current = sql.fragment`case when s.payout_attempt = 1 then s.ref_code else s.ref_code || '-' || s.payout_attempt end`;

// An earlier attempt's vendors are those its reference went to (payout_references.vendors).
const settlementPayouts = (where: Fragment) => sql.fragment`
  select 'PAYOUT', pr.reference, s.id, s.merchant_id, s.vendor_code,
         case when pr.reference = ${current} then array_remove(array[s.vendor_code], null) || s.vendors_tried else pr.vendors end,
         case when pr.reference = ${current} then s.vendor_disbursement_id end, s.net_payout,
         case when pr.reference = ${current} then s.status else 'EARLIER_ATTEMPT' end,
         pr.created_at, 'SETTLEMENT', null::text
  from payout_references pr join settlements s on s.id = pr.payout_id
  where pr.kind = 'SETTLEMENT' and ${where}`;

const refunds = (where: Fragment) => sql.fragment`
  select 'REFUND', r.ref_code, r.id, r.merchant_id, r.vendor_code, array_remove(array[r.vendor_code], null),
         r.vendor_refund_id, r.amount, r.status, r.created_at, null::text, o.ref_code
  from refunds r join orders o on o.id = r.order_id where ${where}`;

/**
 * Kasir's records of one vendor and day: payments it paid then, payouts whose reference was
 * recorded then, refunds made then (each walks an index on vendor and time).
 */
export function kasirDay(db: Db, vendorCode: string, from: Date, to: Date) {
  const since = sql.timestamp(from);
  const until = sql.timestamp(to);
  return db.any(sql.type(kasirRow)`
    ${orders(sql.fragment`o.vendor_code = ${vendorCode} and o.status in ('PAID', 'REFUNDED') and o.paid_at >= ${since} and o.paid_at < ${until}`)}
    union all
    ${disbursementPayouts(sql.fragment`pr.created_at >= ${since} and pr.created_at < ${until} and d.vendor_code = ${vendorCode}`)}
    union all
    ${settlementPayouts(sql.fragment`pr.created_at >= ${since} and pr.created_at < ${until} and s.vendor_code = ${vendorCode}`)}
    union all
    ${refunds(sql.fragment`r.vendor_code = ${vendorCode} and r.created_at >= ${since} and r.created_at < ${until}`)}`);
}

/** What Kasir's records are found by, per subject, for vendor lines the day's records did not match. */
export interface Lookup {
  orderRefs: readonly string[];
  payoutRefs: readonly string[];
  payoutVendorIds: readonly string[];
  refundRefs: readonly string[];
  refundVendorIds: readonly string[];
  /** Orders whose refunds are wanted (refund lines that name only the payment they return). */
  refundOrderRefs: readonly string[];
}

/** Kasir's records by reference or vendor id, whatever their vendor, status or day. */
export function kasirByReference(db: Db, l: Lookup) {
  const text = (values: readonly string[]) => sql.array([...values], 'text');
  return db.any(sql.type(kasirRow)`
    ${orders(sql.fragment`o.ref_code = any(${text(l.orderRefs)})`)}
    union all
    ${disbursementPayouts(sql.fragment`pr.reference = any(${text(l.payoutRefs)})`)}
    union all
    ${settlementPayouts(sql.fragment`pr.reference = any(${text(l.payoutRefs)})`)}
    union all
    ${disbursementPayouts(sql.fragment`d.vendor_disbursement_id = any(${text(l.payoutVendorIds)})`)}
    union all
    ${settlementPayouts(sql.fragment`s.vendor_disbursement_id = any(${text(l.payoutVendorIds)}) and pr.reference = ${current}`)}
    union all
    ${refunds(sql.fragment`r.ref_code = any(${text(l.refundRefs)})`)}
    union all
    ${refunds(sql.fragment`r.vendor_refund_id = any(${text(l.refundVendorIds)})`)}
    union all
    ${refunds(sql.fragment`o.ref_code = any(${text(l.refundOrderRefs)})`)}`);
}

const kasirSentRow = kasirRow.extend({ order_vendor_id: z.string().nullable() });

/**
 * What a vendor without a list is asked about, record by record: what Kasir sent it in
 * [from, to) (any status), the orders it paid then, and the orders created earlier that could
 * still be paid in [from, to): unpaid (PENDING or EXPIRED) with a lifetime reaching into it (no
 * expiry: open for ever). An order created at 22:00 on D−1 whose payment at 00:10 on D never
 * reached Kasir is read by D's run; neither of the first two would read it on any day.
 */
export function kasirSent(db: Db, vendorCode: string, from: Date, to: Date) {
  const since = sql.timestamp(from);
  const until = sql.timestamp(to);
  return db.any(sql.type(kasirSentRow)`
    select k.*, null::text as order_vendor_id from (
      ${orders(sql.fragment`o.vendor_code = ${vendorCode} and o.created_at >= ${since} and o.created_at < ${until}`)}
      union all
      ${orders(sql.fragment`o.vendor_code = ${vendorCode} and o.status in ('PAID', 'REFUNDED') and o.paid_at >= ${since} and o.paid_at < ${until}
                            and not (o.created_at >= ${since} and o.created_at < ${until})`)}
      union all
      ${orders(sql.fragment`o.vendor_code = ${vendorCode} and o.status in ('PENDING', 'EXPIRED') and o.created_at < ${since}
                            and (o.expires_at is null or o.expires_at > ${since})`)}
      union all
      ${disbursementPayouts(sql.fragment`pr.created_at >= ${since} and pr.created_at < ${until} and d.vendor_code = ${vendorCode}`)}
      union all
      ${settlementPayouts(sql.fragment`pr.created_at >= ${since} and pr.created_at < ${until} and s.vendor_code = ${vendorCode}`)}
    ) k
    union all
    select 'REFUND', r.ref_code, r.id, r.merchant_id, r.vendor_code, array_remove(array[r.vendor_code], null),
           r.vendor_refund_id, r.amount, r.status, r.created_at, null::text, o.ref_code, o.vendor_order_id
    from refunds r join orders o on o.id = r.order_id
    where r.vendor_code = ${vendorCode} and r.created_at >= ${since} and r.created_at < ${until}`);
}

// ---------------------------------------------------------------- vendor costs

export const vendorCosts = z.object({ cost_payment_bps: z.number().nullable(), cost_payout: z.number().nullable(), cost_refund: z.number().nullable() });
export type VendorCosts = z.infer<typeof vendorCosts>;

export function findVendorCosts(db: Db, vendorCode: string) {
  return db.maybeOne(sql.type(vendorCosts)`select cost_payment_bps, cost_payout, cost_refund from vendors where code = ${vendorCode}`);
}

/** Sets the costs given (undefined: unchanged; null: no assumption); false for an unknown vendor. */
export async function setVendorCosts(db: Db, vendorCode: string, costs: Partial<VendorCosts>): Promise<boolean> {
  const keep = (column: keyof VendorCosts) => costs[column] === undefined;
  const updated = await db.maybeOneFirst(sql.type(codeRow)`
    update vendors
    set cost_payment_bps = case when ${keep('cost_payment_bps')} then cost_payment_bps else ${costs.cost_payment_bps ?? null}::int4 end,
        cost_payout = case when ${keep('cost_payout')} then cost_payout else ${costs.cost_payout ?? null}::int8 end,
        cost_refund = case when ${keep('cost_refund')} then cost_refund else ${costs.cost_refund ?? null}::int8 end,
        updated_at = now()
    where code = ${vendorCode} returning code`);
  return updated !== null;
}

// ---------------------------------------------------------------- runs

const subjectTotals = z.record(z.string(), z.record(z.string(), z.number()));

export const runRow = z.object({
  id: z.string(),
  vendor_code: z.string(),
  day: z.string(),
  status: z.enum(['RUNNING', 'COMPLETED', 'FAILED']),
  trigger: z.enum(['schedule', 'operator']),
  source: z.string().nullable(),
  vendor_lines: z.number().nullable(),
  kasir_records: z.number().nullable(),
  matched: subjectTotals.nullable(),
  fees: subjectTotals.nullable(),
  time_skews: z.record(z.string(), z.number()).nullable(),
  new_differences: z.number().nullable(),
  open_differences: z.number().nullable(),
  repaired: z.number().nullable(),
  error: z.string().nullable(),
  started_at: z.date(),
  finished_at: z.date().nullable(),
});
export type RunRow = z.infer<typeof runRow>;

const runColumns = sql.fragment`
  id, vendor_code, day::text as day, status, trigger, source, vendor_lines, kasir_records, matched, fees, time_skews,
  new_differences, open_differences, repaired, error, started_at, finished_at`;

/** Inserts a RUNNING run; null when another run of the vendor and day is RUNNING. */
export function insertRun(db: Db, run: { id: string; vendorCode: string; day: string; trigger: 'schedule' | 'operator' }) {
  return db.maybeOne(sql.type(runRow)`
    insert into recon_runs (id, vendor_code, day, trigger) values (${run.id}, ${run.vendorCode}, ${run.day}::date, ${run.trigger})
    on conflict (vendor_code, day) where status = 'RUNNING' do nothing
    returning ${runColumns}`);
}

/** Fails a RUNNING run of the vendor and day started more than `seconds` ago (its process died). */
export function failStaleRun(db: Db, vendorCode: string, day: string, seconds: number) {
  return db.maybeOneFirst(sql.type(idRow)`
    update recon_runs set status = 'FAILED', error = 'abandoned: its process stopped before it finished', finished_at = now()
    where vendor_code = ${vendorCode} and day = ${day}::date and status = 'RUNNING'
      and started_at < now() - make_interval(secs => ${seconds})
    returning id`);
}

export interface RunSummary {
  source: string;
  vendorLines: number;
  kasirRecords: number;
  matched: Record<string, Record<string, number>>;
  fees: Record<string, Record<string, number>>;
  timeSkews: Record<string, number>;
  newDifferences: number;
  openDifferences: number;
  repaired: number;
}

export function completeRun(db: Db, id: string, s: RunSummary) {
  return db.one(sql.type(runRow)`
    update recon_runs
    set status = 'COMPLETED', source = ${s.source}, vendor_lines = ${s.vendorLines}, kasir_records = ${s.kasirRecords},
        matched = ${sql.jsonb(s.matched)}, fees = ${sql.jsonb(s.fees)}, time_skews = ${sql.jsonb(s.timeSkews)},
        new_differences = ${s.newDifferences}, open_differences = ${s.openDifferences}, repaired = ${s.repaired},
        finished_at = clock_timestamp()
    where id = ${id}
    returning ${runColumns}`);
}

export function failRun(db: Db, id: string, error: string) {
  return db.one(sql.type(runRow)`
    update recon_runs set status = 'FAILED', error = ${error.slice(0, 1000)}, finished_at = clock_timestamp()
    where id = ${id} returning ${runColumns}`);
}

export function findRun(db: Db, id: string) {
  return db.maybeOne(sql.type(runRow)`select ${runColumns} from recon_runs where id = ${id}`);
}

export function listRuns(db: Db, filter: { vendorCode: string | null; day: string | null }, limit: number) {
  return db.any(sql.type(runRow)`
    select ${runColumns} from recon_runs
    where (${filter.vendorCode}::text is null or vendor_code = ${filter.vendorCode})
      and (${filter.day}::date is null or day = ${filter.day}::date)
    order by day desc, started_at desc limit ${limit}`);
}

// ---------------------------------------------------------------- differences

export const differenceRow = z.object({
  id: z.string(),
  run_id: z.string(),
  last_run_id: z.string(),
  vendor_code: z.string(),
  day: z.string(),
  kind: reconKind,
  subject: reconSubject,
  fingerprint: z.string(),
  reference: z.string().nullable(),
  vendor_reference: z.string().nullable(),
  merchant_id: z.string().nullable(),
  kasir_amount: z.number().nullable(),
  vendor_amount: z.number().nullable(),
  kasir_status: z.string().nullable(),
  vendor_status: z.string().nullable(),
  detail: z.string(),
  status: differenceStatus,
  repair: z.string().nullable(),
  repaired_run_id: z.string().nullable(),
  resolution_note: z.string().nullable(),
  resolved_at: z.date().nullable(),
  created_at: z.date(),
});
export type DifferenceRow = z.infer<typeof differenceRow>;

const differenceColumns = sql.fragment`
  id, run_id, last_run_id, vendor_code, day::text as day, kind, subject, fingerprint, reference, vendor_reference,
  merchant_id, kasir_amount, vendor_amount, kasir_status, vendor_status, detail, status, repair, repaired_run_id,
  resolution_note, resolved_at, created_at`;

/** A difference as a run found it. */
export interface NewDifference {
  kind: ReconKind;
  subject: ReconSubject;
  fingerprint: string;
  reference: string | null;
  vendorReference: string | null;
  merchantId: string | null;
  kasirAmount: number | null;
  vendorAmount: number | null;
  kasirStatus: string | null;
  vendorStatus: string | null;
  detail: string;
  /** Why an allowed repair was not made (null: none was allowed, or it was made). */
  repair: string | null;
}

const recordDifferencesRow = differenceRow.extend({ inserted: z.boolean() });

/**
 * Writes what a run found for its vendor and day: OPEN differences it no longer finds are
 * removed (a rerun replaces them), known ones are kept with their state and marked as found by
 * this run, new ones inserted. Returns the rows inserted (the new differences).
 */
export async function recordDifferences(db: Db, run: { id: string; vendorCode: string; day: string }, found: readonly NewDifference[]) {
  await db.query(sql.unsafe`
    delete from recon_differences
    where vendor_code = ${run.vendorCode} and day = ${run.day}::date and status = 'OPEN'
      and not (fingerprint = any(${sql.array(found.map((d) => d.fingerprint), 'text')}))`);
  if (found.length === 0) return [];
  const rows = await db.any(sql.type(recordDifferencesRow)`
    insert into recon_differences (run_id, last_run_id, vendor_code, day, kind, subject, fingerprint, reference, vendor_reference,
                                   merchant_id, kasir_amount, vendor_amount, kasir_status, vendor_status, detail, repair)
    select ${run.id}, ${run.id}, ${run.vendorCode}, ${run.day}::date, d.kind, d.subject, d.fingerprint, d.reference, d.vendor_reference,
           d.merchant_id, d.kasir_amount, d.vendor_amount, d.kasir_status, d.vendor_status, d.detail, d.repair
    from ${sql.unnest(
      found.map((d) => [d.kind, d.subject, d.fingerprint, d.reference, d.vendorReference, d.merchantId, d.kasirAmount, d.vendorAmount, d.kasirStatus, d.vendorStatus, d.detail, d.repair]),
      ['text', 'text', 'text', 'text', 'text', 'uuid', 'int8', 'int8', 'text', 'text', 'text', 'text'],
    )} as d(kind, subject, fingerprint, reference, vendor_reference, merchant_id, kasir_amount, vendor_amount, kasir_status, vendor_status, detail, repair)
    on conflict (vendor_code, day, fingerprint) do update
      set last_run_id = excluded.last_run_id, updated_at = now(),
          repair = case when recon_differences.status = 'OPEN' then excluded.repair else recon_differences.repair end
    returning ${differenceColumns}, (xmax = 0) as inserted`);
  return rows.filter((r) => r.inserted);
}

/** Records a repair with the run that made it (in the repair's own transaction). */
export function recordRepair(db: Db, run: { id: string; vendorCode: string; day: string }, d: NewDifference, repair: string) {
  return db.one(sql.type(differenceRow)`
    insert into recon_differences (run_id, last_run_id, vendor_code, day, kind, subject, fingerprint, reference, vendor_reference,
                                   merchant_id, kasir_amount, vendor_amount, kasir_status, vendor_status, detail, status, repair,
                                   repaired_run_id)
    values (${run.id}, ${run.id}, ${run.vendorCode}, ${run.day}::date, ${d.kind}, ${d.subject}, ${d.fingerprint}, ${d.reference},
            ${d.vendorReference}, ${d.merchantId}, ${d.kasirAmount}, ${d.vendorAmount}, ${d.kasirStatus}, ${d.vendorStatus},
            ${d.detail}, 'REPAIRED', ${repair}, ${run.id})
    on conflict (vendor_code, day, fingerprint) do update
      set status = 'REPAIRED', repair = excluded.repair, repaired_run_id = excluded.repaired_run_id,
          last_run_id = excluded.last_run_id, updated_at = now()
    returning ${differenceColumns}`);
}

export interface DifferenceFilter {
  vendorCode: string | null;
  day: string | null;
  status: 'OPEN' | 'REPAIRED' | 'RESOLVED' | null;
}

export function listDifferences(db: Db, f: DifferenceFilter, limit: number) {
  return db.any(sql.type(differenceRow)`
    select ${differenceColumns} from recon_differences
    where (${f.vendorCode}::text is null or vendor_code = ${f.vendorCode})
      and (${f.day}::date is null or day = ${f.day}::date)
      and (${f.status}::text is null or status = ${f.status})
    order by day desc, vendor_code, kind, reference nulls last, created_at
    limit ${limit}`);
}

/** A person's resolution of an OPEN difference, with their note; null when there is no such open difference. */
export function resolveDifference(db: Db, id: string, note: string) {
  return db.maybeOne(sql.type(differenceRow)`
    update recon_differences set status = 'RESOLVED', resolution_note = ${note}, resolved_at = now(), updated_at = now()
    where id = ${id} and status = 'OPEN'
    returning ${differenceColumns}`);
}

export function findDifference(db: Db, id: string) {
  return db.maybeOne(sql.type(differenceRow)`select ${differenceColumns} from recon_differences where id = ${id}`);
}

export function countOpenDifferences(db: Db, vendorCode: string, day: string) {
  return db.oneFirst(sql.type(countRow)`
    select count(*)::int as n from recon_differences where vendor_code = ${vendorCode} and day = ${day}::date and status = 'OPEN'`);
}

const openGaugeRow = z.object({ vendor: z.string(), kind: z.string(), count: z.number() });
export type OpenDifferenceGaugeRow = z.infer<typeof openGaugeRow>;

/**
 * Open differences by vendor and kind, a zero for every kind of every vendor reconciled at
 * least once (an alert sees a series before its first difference). Walks the partial index of
 * open differences.
 */
export function readOpenDifferenceGauges(db: Db): Promise<readonly OpenDifferenceGaugeRow[]> {
  return db.any(sql.type(openGaugeRow)`
    with reconciled as (select distinct vendor_code from recon_runs)
    select v.vendor_code as vendor, k.kind, coalesce(c.n, 0)::int as count
    from reconciled v
    cross join unnest(${sql.array([...reconKind.options], 'text')}) as k(kind)
    left join (
      select vendor_code, kind, count(*) as n from recon_differences where status = 'OPEN' group by vendor_code, kind
    ) c on c.vendor_code = v.vendor_code and c.kind = k.kind
    order by 1, 2`);
}
