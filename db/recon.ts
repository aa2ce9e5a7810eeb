// Reconciliation of one vendor and one WIB day (docs/money.md, "Reconciliation"): what the
// vendor reports it collected, paid out and refunded, line by line, against Kasir's orders,
// payouts (disbursements and settlement payouts, by the reference each went out under) and
// refunds at that vendor. This module holds the comparison (a pure function of both sides), the
// two repairs it may make on its own, and the words a finance team reads. The run itself, which
// reads the vendor, is workers/recon-run.ts.
//
// Invariants and why they hold:
// - Only two repairs are ever automatic, each applied through the function a callback of that
//   vendor uses, bound to that vendor, after the vendor's own authenticated per-record read says
//   so: a payment whose callback never came (applyPayment), and a payout still in flight that the
//   vendor reports final (completePayout). Everything else waits for a person.
// - A repair and its record (the difference REPAIRED, with the run that made it) commit in one
//   transaction, so a repair is never made without its record or recorded without being made.
// - A difference is known within its vendor and day by a fingerprint of what differs, so a rerun
//   keeps what a person resolved and removes only the OPEN differences it no longer finds.
import { createHash } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import { applyPayment } from './orders.ts';
import { completePayout, findPayoutReference } from './payouts.ts';
import { lockDisbursement } from './disbursements.sql.ts';
import { lockSettlement } from './settlements.sql.ts';
import { parsePayoutReference } from './settlements.ts';
import type { Pool } from './pool.ts';
import { recordRepair, type KasirRow, type NewDifference, type ReconKind, type ReconSubject, type VendorCosts } from './recon.sql.ts';

const WIB_OFFSET_MS = 7 * 3600_000;
const DAY_MS = 24 * 3600_000;
/** Vendor lines this far either side of the day are read too: they complete matches, never report. */
export const MARGIN_MS = 15 * 60_000;
/** A matched line whose time is further than this from Kasir's is counted as a time skew. */
export const TIME_TOLERANCE_MS = 15 * 60_000;

/** A finance team's words for each kind. */
export const KIND_LABELS: Readonly<Record<ReconKind, string>> = {
  PAID_AT_VENDOR_ONLY: 'paid at the vendor but not in Kasir',
  PAID_IN_KASIR_ONLY: 'paid in Kasir but unknown to the vendor',
  AMOUNT_DIFFERS: 'amount differs',
  STATUS_DIFFERS: 'final status differs',
  PAID_TWICE: 'paid out twice',
  NO_KASIR_RECORD: 'a vendor line with no Kasir record',
};

/** The instants of WIB day `day` (YYYY-MM-DD), and the wider window its vendor is read over. */
export function reconWindow(day: string): { dayStart: Date; dayEnd: Date; from: Date; to: Date } {
  const start = Date.parse(`${day}T00:00:00Z`) - WIB_OFFSET_MS;
  return { dayStart: new Date(start), dayEnd: new Date(start + DAY_MS), from: new Date(start - MARGIN_MS), to: new Date(start + DAY_MS + MARGIN_MS) };
}

/** The WIB calendar day of an instant. */
export const wibDay = (at: Date) => new Date(at.getTime() + WIB_OFFSET_MS).toISOString().slice(0, 10);

/** The WIB day before the one `at` falls on: what the daily schedule reconciles. */
export const previousWibDay = (at: Date) => wibDay(new Date(at.getTime() - DAY_MS));

/** amount × bps / 10000, rounded half up, in BigInt (amount × bps can pass 2^53). */
export const bpsOf = (amount: number, bps: number) => Number((BigInt(amount) * BigInt(bps) + 5000n) / 10000n);

/** One line of a vendor's report (gateways/gateway.ts VendorLine, restated: db/ sits below gateways/). */
export interface ReportLine {
  kind: ReconSubject;
  reference: string | null;
  vendorId: string | null;
  orderReference?: string | null;
  amount: number;
  status: 'SUCCESS' | 'PENDING' | 'FAILED';
  at: Date;
  fee: number | null;
  netOfUnstatedFee?: boolean;
}

/**
 * What Kasir's books say happened at the vendor: SUCCESS (the money moved), IN_FLIGHT (a payout
 * or refund sent and not final), NONE (nothing moved: an unpaid order, a payout never sent),
 * FAILED (Kasir's final word is that nothing moved, or that this vendor's attempt was given up).
 */
export type KasirState = 'SUCCESS' | 'IN_FLIGHT' | 'NONE' | 'FAILED';

/** Whether `vendorCode` is the vendor Kasir holds the record at now (a payout's current attempt). */
export function isCurrentVendor(r: KasirRow, vendorCode: string): boolean {
  if (r.vendor_code !== null) return r.vendor_code === vendorCode && r.raw_status !== 'EARLIER_ATTEMPT';
  // An order still being created: the vendor called for it (pending_vendor) comes first.
  return r.subject === 'PAYMENT' && r.vendors[0] === vendorCode;
}

/** Kasir's state of a record at `vendorCode`; null when that vendor was never called for it. */
export function stateAt(r: KasirRow, vendorCode: string): KasirState | null {
  if (!r.vendors.includes(vendorCode)) return null;
  const current = isCurrentVendor(r, vendorCode);
  switch (r.subject) {
    case 'PAYMENT':
      return current && (r.raw_status === 'PAID' || r.raw_status === 'REFUNDED') ? 'SUCCESS' : 'NONE';
    case 'PAYOUT':
      // A vendor Kasir moved on from (it refused, or the settlement was retried elsewhere) holds nothing of Kasir's.
      if (!current) return 'FAILED';
      if (r.raw_status === 'SUCCESS' || r.raw_status === 'PAID') return 'SUCCESS';
      if (r.raw_status === 'ON_PROCESS' || r.raw_status === 'PROCESSING') return 'IN_FLIGHT';
      if (r.raw_status === 'PENDING' || r.raw_status === 'IN_REVIEW') return 'NONE';
      return 'FAILED';
    case 'REFUND':
      return r.raw_status === 'SUCCEEDED' ? 'SUCCESS' : r.raw_status === 'PENDING' ? 'IN_FLIGHT' : 'FAILED';
  }
}

/** An allowed repair, to be confirmed by the vendor's per-record read before it is made. */
export type Repair =
  | { type: 'payment'; refCode: string; vendorOrderId: string | null }
  | { type: 'payout'; reference: string; vendorId: string | null };

export interface Found extends NewDifference {
  repairable: Repair | null;
}

export interface Comparison {
  differences: Found[];
  /** Matched pairs of the day, per subject: how many and their amount. */
  matched: Record<ReconSubject, { count: number; amount: number }>;
  /** The vendor's fees on matched lines against the cost Kasir assumed, per subject. */
  fees: Record<string, Record<string, number>>;
  timeSkews: Record<ReconSubject, number>;
  /** Kasir's records that took part (the day's, and those vendor lines led to). */
  kasirRecords: number;
}

const rupiah = (n: number | null) => (n === null ? '-' : `Rp ${n.toLocaleString('en')}`);

function fingerprint(d: Omit<NewDifference, 'fingerprint' | 'detail' | 'repair'>): string {
  const parts = [d.kind, d.subject, d.reference ?? '', d.vendorReference ?? '', d.kasirAmount ?? '', d.vendorAmount ?? '', d.kasirStatus ?? '', d.vendorStatus ?? ''];
  return createHash('sha256').update(parts.join('\n')).digest('hex').slice(0, 32);
}

const key = (subject: string, value: string) => `${subject}\n${value}`;

/**
 * Compares a vendor's lines with Kasir's records for one vendor and day. `dayRecords`: Kasir's
 * records of the day at the vendor (db/recon.sql.ts kasirDay); `otherRecords`: those found by
 * the lines' references that are not among them (another day, status or vendor).
 */
export function compareDay(input: {
  vendorCode: string;
  day: string;
  dayRecords: readonly KasirRow[];
  otherRecords: readonly KasirRow[];
  lines: readonly ReportLine[];
  costs: VendorCosts | null;
}): Comparison {
  const { vendorCode } = input;
  const { dayStart, dayEnd } = reconWindow(input.day);
  const inDay = (at: Date | null) => at !== null && at >= dayStart && at < dayEnd;
  const vendorName = vendorCode;

  // Every record once, the day's first (a looked-up record may also be one of the day's).
  const records = new Map<string, KasirRow>();
  for (const r of [...input.dayRecords, ...input.otherRecords]) if (!records.has(key(r.subject, r.reference))) records.set(key(r.subject, r.reference), r);
  const dayKeys = new Set(input.dayRecords.map((r) => key(r.subject, r.reference)));
  const byVendorId = new Map<string, KasirRow>();
  const refundsByOrder = new Map<string, KasirRow[]>();
  for (const r of records.values()) {
    if (r.vendor_id !== null && !byVendorId.has(key(r.subject, r.vendor_id))) byVendorId.set(key(r.subject, r.vendor_id), r);
    if (r.subject === 'REFUND' && r.order_reference !== null) refundsByOrder.set(r.order_reference, [...(refundsByOrder.get(r.order_reference) ?? []), r]);
  }

  const groups = new Map<KasirRow, ReportLine[]>();
  const attach = (r: KasirRow, line: ReportLine) => groups.set(r, [...(groups.get(r) ?? []), line]);
  const unmatched: ReportLine[] = [];
  const orphanRefunds: ReportLine[] = [];
  for (const line of input.lines) {
    const r = (line.reference !== null ? records.get(key(line.kind, line.reference)) : undefined) ?? (line.vendorId !== null ? byVendorId.get(key(line.kind, line.vendorId)) : undefined);
    if (r) attach(r, line);
    else if (line.kind === 'REFUND' && line.orderReference) orphanRefunds.push(line);
    else unmatched.push(line);
  }
  // A refund line naming only its payment: Kasir's refund of that order with the same amount. A
  // second one (the vendor refunded twice) joins the refund it repeats.
  for (const line of orphanRefunds) {
    const candidates = (refundsByOrder.get(line.orderReference!) ?? []).filter((r) => r.amount === line.amount && r.vendors.includes(vendorCode));
    const target = candidates.find((r) => groups.has(r)) ?? candidates[0];
    if (target) attach(target, line);
    else unmatched.push(line);
  }

  const differences: Found[] = [];
  const matched = { PAYMENT: { count: 0, amount: 0 }, PAYOUT: { count: 0, amount: 0 }, REFUND: { count: 0, amount: 0 } };
  const timeSkews = { PAYMENT: 0, PAYOUT: 0, REFUND: 0 };
  const fees: Record<string, Record<string, number>> = {};
  const add = (d: Omit<Found, 'fingerprint' | 'repair'>) => differences.push({ ...d, fingerprint: fingerprint(d), repair: null });

  const noteFee = (subject: ReconSubject, amount: number, fee: number | null) => {
    if (fee === null) return;
    const assumed = assumedFee(subject, amount, input.costs);
    const f = (fees[subject] ??= { lines: 0, vendor_fee: 0 });
    f.lines++;
    f.vendor_fee += fee;
    if (assumed === null) return;
    f.assumed_fee = (f.assumed_fee ?? 0) + assumed;
    f.difference = (f.difference ?? 0) + fee - assumed;
    f.lines_differing = (f.lines_differing ?? 0) + (fee === assumed ? 0 : 1);
  };

  let kasirRecords = 0;
  for (const [k, r] of records) {
    const lines = groups.get(r) ?? [];
    const recordInDay = dayKeys.has(k) && inDay(r.at);
    if (!recordInDay && !lines.some((l) => inDay(l.at))) continue;
    kasirRecords++;
    const state = stateAt(r, vendorCode);
    const base = { subject: r.subject, reference: r.reference, merchantId: r.merchant_id, kasirAmount: r.amount, kasirStatus: r.raw_status };
    if (state === null) {
      for (const line of lines.filter((l) => inDay(l.at))) {
        add({
          ...base,
          kind: 'NO_KASIR_RECORD',
          vendorReference: line.vendorId,
          vendorAmount: line.amount,
          vendorStatus: line.status,
          detail: `${vendorName} reports ${line.kind} ${line.reference ?? line.vendorId} (${rupiah(line.amount)}, ${line.status}); Kasir sent ${r.reference} to ${r.vendor_code ?? 'no vendor'}, never to ${vendorName}`,
          repairable: null,
        });
      }
      continue;
    }
    const successes = lines.filter((l) => l.status === 'SUCCESS');
    if (successes.length >= 2) {
      add({
        ...base,
        kind: 'PAID_TWICE',
        vendorReference: successes.map((l) => l.vendorId ?? '?').join(' '),
        vendorAmount: successes.reduce((sum, l) => sum + l.amount, 0),
        vendorStatus: 'SUCCESS',
        detail: `${vendorName} reports ${r.reference} done ${successes.length} times (${successes.map((l) => rupiah(l.amount)).join(' + ')}); Kasir made it once (${rupiah(r.amount)}, ${r.raw_status})`,
        repairable: null,
      });
      continue;
    }
    const reported = successes[0] ?? [...lines].sort((a, b) => b.at.getTime() - a.at.getTime())[0];
    if (!reported) {
      if (recordInDay && (state === 'SUCCESS' || state === 'IN_FLIGHT')) {
        add({
          ...base,
          kind: 'PAID_IN_KASIR_ONLY',
          vendorReference: r.vendor_id,
          vendorAmount: null,
          vendorStatus: null,
          detail: `Kasir shows ${r.subject.toLowerCase()} ${r.reference} ${r.raw_status} (${rupiah(r.amount)}) at ${vendorName}; ${vendorName}'s report has no line for it`,
          repairable: null,
        });
      }
      continue;
    }
    // A net amount whose fee the vendor did not state is compared as net plus the assumed fee.
    const line = reported.netOfUnstatedFee ? { ...reported, amount: reported.amount + (assumedFee(r.subject, r.amount, input.costs) ?? 0) } : reported;
    const seen = { vendorReference: line.vendorId, vendorAmount: line.amount, vendorStatus: line.status };
    if (line.amount !== r.amount) {
      add({
        ...base,
        ...seen,
        kind: 'AMOUNT_DIFFERS',
        detail: `${vendorName} reports ${r.reference} as ${rupiah(line.amount)} (${line.status}); Kasir holds ${rupiah(r.amount)} (${r.raw_status})`,
        repairable: null,
      });
      continue;
    }
    const current = isCurrentVendor(r, vendorCode);
    if (line.status === 'SUCCESS' && state === 'SUCCESS') {
      if (recordInDay) {
        matched[r.subject].count++;
        matched[r.subject].amount += r.amount;
        noteFee(r.subject, r.amount, line.fee);
        if (r.at !== null && Math.abs(line.at.getTime() - r.at.getTime()) > TIME_TOLERANCE_MS) timeSkews[r.subject]++;
      }
      continue;
    }
    if (line.status === 'SUCCESS' && (state === 'NONE' || state === 'IN_FLIGHT')) {
      const repairable: Repair | null =
        r.subject === 'PAYMENT' && current
          ? { type: 'payment', refCode: r.reference, vendorOrderId: r.vendor_id }
          : r.subject === 'PAYOUT' && state === 'IN_FLIGHT'
            ? { type: 'payout', reference: r.reference, vendorId: r.vendor_id ?? line.vendorId }
            : null;
      add({
        ...base,
        ...seen,
        kind: 'PAID_AT_VENDOR_ONLY',
        detail: `${vendorName} reports ${r.reference} ${r.subject === 'PAYMENT' ? 'paid' : 'done'} (${rupiah(line.amount)}) at ${line.at.toISOString()}; Kasir shows it ${r.raw_status}`,
        repairable,
      });
      continue;
    }
    const contradicts = (line.status === 'SUCCESS' && state === 'FAILED') || (line.status === 'FAILED' && (state === 'SUCCESS' || state === 'IN_FLIGHT')) || (line.status === 'PENDING' && state === 'SUCCESS');
    if (contradicts) {
      add({
        ...base,
        ...seen,
        kind: 'STATUS_DIFFERS',
        detail: `${vendorName} reports ${r.reference} ${line.status}; Kasir shows it ${r.raw_status}`,
        repairable: r.subject === 'PAYOUT' && state === 'IN_FLIGHT' && line.status === 'FAILED' ? { type: 'payout', reference: r.reference, vendorId: r.vendor_id ?? line.vendorId } : null,
      });
    }
  }

  for (const line of unmatched) {
    if (!inDay(line.at) || line.status === 'FAILED') continue;
    add({
      kind: 'NO_KASIR_RECORD',
      subject: line.kind,
      reference: line.reference,
      vendorReference: line.vendorId,
      merchantId: null,
      kasirAmount: null,
      vendorAmount: line.amount,
      kasirStatus: null,
      vendorStatus: line.status,
      detail: `${vendorName} reports ${line.kind.toLowerCase()} ${line.reference ?? line.vendorId ?? '(no reference)'}${line.orderReference ? ` of ${line.orderReference}` : ''} (${rupiah(line.amount)}, ${line.status}) at ${line.at.toISOString()}; Kasir has no record of it`,
      repairable: null,
    });
  }
  // One difference per fingerprint (a vendor listing the same line twice is still one).
  const unique = [...new Map(differences.map((d) => [d.fingerprint, d])).values()];
  return { differences: unique, matched, fees, timeSkews, kasirRecords };
}

/** What Kasir assumed the vendor charges for one line; null without an assumption. */
export function assumedFee(subject: ReconSubject, amount: number, costs: VendorCosts | null): number | null {
  if (!costs) return null;
  if (subject === 'PAYMENT') return costs.cost_payment_bps === null ? null : bpsOf(amount, costs.cost_payment_bps);
  return subject === 'PAYOUT' ? costs.cost_payout : costs.cost_refund;
}

export interface RunRef {
  id: string;
  vendorCode: string;
  day: string;
}

/**
 * What an allowed repair came to: made; not needed, because the record is already final as the
 * vendor reports it (its callback came while the run compared: no difference is left); or not
 * made, with the reason.
 */
export type RepairResult = { outcome: 'repaired' | 'already_final' | 'refused'; note: string };

/**
 * A lost payment callback, repaired: the vendor's per-record read says the order is paid, and it
 * is applied as that vendor's payment callback would be (applyPayment, its amount check
 * included), only to an order held at that vendor.
 */
export function repairPayment(
  pool: Pool,
  boss: PgBoss,
  run: RunRef,
  d: NewDifference,
  paid: { refCode: string; amount: number; paidAt: Date; rrn: string | null; vendorOrderId: string | null },
): Promise<RepairResult> {
  return pool.transaction(async (tx): Promise<RepairResult> => {
    // applyPayment applies it only if this vendor holds the order (db/vendor-binding.ts), the
    // same rule a callback meets; otherwise it records the conflict and answers not_its_record.
    const result = await applyPayment(tx, boss, paid, { vendor: run.vendorCode, via: 'reconcile' });
    // Paid meanwhile by the vendor's own callback (applyPayment checked it is the holder's).
    if (result === 'already_paid') return { outcome: 'already_final', note: `${paid.refCode} is already paid` };
    if (result !== 'paid' && result !== 'paid_late') return { outcome: 'refused', note: `not applied: ${result}` };
    const note = `applied as ${run.vendorCode}'s payment callback would be (${result})`;
    await recordRepair(tx, run, d, note);
    return { outcome: 'repaired', note };
  });
}

/**
 * A payout still in flight that the vendor reports final, repaired: applied as that vendor's
 * final callback would be (completePayout), only to a payout whose current attempt is at it.
 */
export function repairPayout(
  pool: Pool,
  boss: PgBoss,
  run: RunRef,
  d: NewDifference,
  final: { reference: string; status: 'SUCCESS' | 'FAILED'; vendorDisbursementId: string | null; failureReason: string | null },
): Promise<RepairResult> {
  return pool.transaction(async (tx): Promise<RepairResult> => {
    const ref = await findPayoutReference(tx, final.reference);
    if (!ref) return { outcome: 'refused', note: `no payout under ${final.reference}` };
    let held: { vendor_code: string | null; status: string } | null;
    if (ref.kind === 'DISBURSEMENT') {
      held = await lockDisbursement(tx, { id: ref.payout_id });
    } else {
      const attempt = parsePayoutReference(final.reference);
      held = attempt ? await lockSettlement(tx, attempt) : null;
    }
    if (!held) return { outcome: 'refused', note: `no payout under ${final.reference}` };
    if (held.status !== 'ON_PROCESS' && held.status !== 'PROCESSING') {
      // Finished meanwhile (the vendor's callback came while the run compared): nothing is left
      // to repair when it finished the way the vendor reports; otherwise a person looks.
      const agrees = (final.status === 'SUCCESS' ? ['SUCCESS', 'PAID'] : ['FAILED', 'REJECTED', 'CANCELLED']).includes(held.status);
      return agrees
        ? { outcome: 'already_final', note: `${final.reference} is already ${held.status}` }
        : { outcome: 'refused', note: `${final.reference} is ${held.status}, not in flight` };
    }
    const outcome =
      final.status === 'SUCCESS'
        ? { status: 'SUCCESS' as const, vendorDisbursementId: final.vendorDisbursementId }
        : { status: 'FAILED' as const, vendorDisbursementId: final.vendorDisbursementId, reason: final.failureReason ?? 'FAILED' };
    // completePayout applies it only if this vendor holds the payout (db/vendor-binding.ts).
    const result = await completePayout(tx, boss, final.reference, outcome, { vendor: run.vendorCode, via: 'reconcile' });
    if (result !== 'completed') return { outcome: 'refused', note: `not applied: ${result}` };
    const note = `completed ${final.status} as ${run.vendorCode}'s final callback would be`;
    await recordRepair(tx, run, d, note);
    return { outcome: 'repaired', note };
  });
}
