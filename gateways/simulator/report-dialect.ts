// The simulator's daily report in its native protocol (docs/simulator.md, "Reports"): every
// movement of money of the native account between two instants, as a vendor's transaction list
// shows it, read by Kasir's reconciliation. Signed like every /v1 call; paged by a cursor.
//
// What a line is, and when it happened:
// - PAYMENT: a paid QR, at its payment time; fee: the sandbox's price list (0.7 % of the amount,
//   rounded half up).
// - PAYOUT: an accepted disbursement, at its acceptance; PENDING while PROCESSING; fee 2,500 once
//   it succeeded, none when it failed.
// - REFUND: a refund of a native QR, at its time; no fee.
//
// Also here: what the money faults (gateways/simulator/faults.ts) make a vendor do, so that
// reconciliation has each kind of difference to find: a payout accepted and lost, a payout paid
// with another amount, a refund sent twice.
import { Router } from 'express';
import { z } from 'zod';
import type { DisbursementRecord, QrRecord, RefundRecord, Store } from './store.ts';
import { newId } from './store.ts';

/** The sandbox's price list (whole rupiah). */
export const NATIVE_FEES = { paymentBps: 70, payout: 2500, refund: 0 } as const;
/** What a changed_amount fault adds to a payout: the vendor pays this much more than asked. */
export const CHANGED_AMOUNT_DELTA = 1000;
const MAX_PAGE = 5000;

export interface NativeLine {
  type: 'PAYMENT' | 'PAYOUT' | 'REFUND';
  reference: string;
  id: string;
  order_reference: string | null;
  amount: number;
  status: 'SUCCESS' | 'PENDING' | 'FAILED';
  fee: number | null;
  at: string;
}

/** amount × bps / 10000, rounded half up, in BigInt (amount × bps can pass 2^53). */
export const bpsOf = (amount: number, bps: number) => Number((BigInt(amount) * BigInt(bps) + 5000n) / 10000n);

const query = z.object({
  from: z.iso.datetime({ offset: true }),
  to: z.iso.datetime({ offset: true }),
  after: z.string().regex(/^\d{1,15}:[A-Za-z0-9_#.-]{1,100}$/).optional(),
  limit: z.coerce.number().int().min(1).max(MAX_PAGE).default(1000),
});

function paymentLine(qr: QrRecord): NativeLine {
  return { type: 'PAYMENT', reference: qr.reference, id: qr.id, order_reference: null, amount: qr.amount, status: 'SUCCESS', fee: bpsOf(qr.amount, NATIVE_FEES.paymentBps), at: qr.paidAt!.toISOString() };
}

function payoutLine(d: DisbursementRecord): NativeLine {
  const status = d.status === 'PROCESSING' ? 'PENDING' : d.status;
  return { type: 'PAYOUT', reference: d.reference, id: d.id, order_reference: null, amount: d.amount, status, fee: status === 'SUCCESS' ? NATIVE_FEES.payout : null, at: d.createdAt.toISOString() };
}

function refundLine(r: RefundRecord): NativeLine {
  return { type: 'REFUND', reference: r.refundReference, id: r.id, order_reference: r.reference, amount: r.amount, status: 'SUCCESS', fee: NATIVE_FEES.refund, at: r.createdAt.toISOString() };
}

/** Every native line with its time in [from, to), in (time, id) order: the cursor's order. */
export function nativeLines(store: Store, from: Date, to: Date): NativeLine[] {
  const inWindow = (at: Date | null) => at !== null && at >= from && at < to;
  const lines: NativeLine[] = [];
  for (const qr of store.qrs.values()) if (qr.dialect === 'native' && inWindow(qr.paidAt)) lines.push(paymentLine(qr));
  for (const d of store.disbursements.values()) if (d.dialect === 'native' && inWindow(d.createdAt)) lines.push(payoutLine(d));
  for (const r of store.refunds.values()) if (store.qrs.get(r.reference)?.dialect === 'native' && inWindow(r.createdAt)) lines.push(refundLine(r));
  return lines.sort((a, b) => Date.parse(a.at) - Date.parse(b.at) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

const cursorOf = (line: NativeLine) => `${Date.parse(line.at)}:${line.id}`;

/** GET /v1/reports/lines?from=&to=[&after=&limit=]: mounted on the signed /v1 router. */
export function nativeReport(store: Store): Router {
  const router = Router();
  router.get('/reports/lines', (req, res) => {
    const parsed = query.safeParse(req.query);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return void res.status(400).json({ error: { code: 'VALIDATION_ERROR', message: `${issue.path.join('.')}: ${issue.message}` } });
    }
    const { from, to, after, limit } = parsed.data;
    let lines = nativeLines(store, new Date(from), new Date(to));
    if (after) {
      const [ms, id] = [Number(after.slice(0, after.indexOf(':'))), after.slice(after.indexOf(':') + 1)];
      lines = lines.filter((l) => Date.parse(l.at) > ms || (Date.parse(l.at) === ms && l.id > id));
    }
    const page = lines.slice(0, limit);
    res.json({ data: page, next: lines.length > limit ? cursorOf(page[page.length - 1]) : null });
  });
  return router;
}

/**
 * A refund the vendor sent twice (the double_refund fault): a second refund of the same amount
 * under the same refund reference, with an id of its own, kept beside the first.
 */
export function refundAgain(store: Store, qr: QrRecord, first: RefundRecord): void {
  const twin: RefundRecord = { ...first, id: newId('rfd'), createdAt: new Date() };
  qr.refunded += twin.amount;
  store.saveQr(qr);
  store.saveRefundCopy(`${first.refundReference}#2`, twin);
}
