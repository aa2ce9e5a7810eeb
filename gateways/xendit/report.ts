// Kasir's reading of a day at Xendit: the Transactions API (GET /transactions), Xendit's ledger of
// every money movement on the account, filtered by creation time and type, paged by after_id
// (docs/vendors/xendit.md, "Reconciliation"; the request and the response fields as Xendit's own
// SDK has them, xendit-node balance_and_transaction/).
//
// Each transaction is one line:
// - type PAYMENT (a QR payment): reference_id is the QR's reference_id, Kasir's order ref_code;
// - type DISBURSEMENT (a Payouts v2 payout): reference_id is Kasir's payout reference;
// - type REFUND: product_id is the refund's id (Kasir's vendor_refund_id); reference_id is read
//   as the refunded payment's reference_id, the order's ref_code [inferred];
// status SUCCESS is money moved, PENDING not yet, FAILED and REVERSED that it did not (or came
// back: a payout REVERSED after it succeeded); the fee is xendit_fee + value_added_tax, what the
// account is charged for the line.
// A PAYMENT VOIDED is one refunded in full within 24 h of being paid: Xendit voids the payment
// (and returns its fee) instead of listing a REFUND (help centre article 17209624920345). The
// money moved both ways, so it reads as two lines: the payment, paid, and its refund, done,
// naming the order (its refund id is not on the line; the order's refund of that amount is it).
import { z } from 'zod';
import { ReportUnavailable, type Outcome, type ReportDay, type VendorLine, type VendorReport } from '../gateway.ts';
import type { HttpAnswer } from '../http.ts';

/** The most a page may hold (Xendit's default is 10). */
export const TRANSACTIONS_PAGE = 50;
const TYPES = { PAYMENT: 'PAYMENT', DISBURSEMENT: 'PAYOUT', REFUND: 'REFUND' } as const;

const rupiah = z.number().int().nonnegative();
const transaction = z.object({
  id: z.string().min(1),
  product_id: z.string().nullish(),
  type: z.string(),
  status: z.string(),
  reference_id: z.string().nullish(),
  currency: z.string(),
  amount: rupiah,
  created: z.iso.datetime({ offset: true }),
  updated: z.iso.datetime({ offset: true }).nullish(),
  fee: z.object({ xendit_fee: rupiah.nullish(), value_added_tax: rupiah.nullish() }).nullish(),
});
const page = z.object({ data: z.array(transaction), has_more: z.boolean() });

const STATUS: Readonly<Record<string, VendorLine['status']>> = { SUCCESS: 'SUCCESS', PENDING: 'PENDING', FAILED: 'FAILED', VOIDED: 'FAILED', REVERSED: 'FAILED' };

/** A transaction as lines: none for a type reconciliation does not read (top-ups, transfers...), two for a voided payment. */
export function toVendorLines(t: z.infer<typeof transaction>): VendorLine[] {
  const line = toVendorLine(t);
  if (!line) return [];
  if (line.kind !== 'PAYMENT' || t.status !== 'VOIDED') return [line];
  // Paid, then refunded in full: the fee was returned, so there is no fee line to compare.
  return [
    { ...line, status: 'SUCCESS', fee: null },
    { kind: 'REFUND', reference: null, vendorId: null, orderReference: t.reference_id ?? null, amount: t.amount, status: 'SUCCESS', at: new Date(t.updated ?? t.created), fee: null },
  ];
}

function toVendorLine(t: z.infer<typeof transaction>): VendorLine | null {
  const kind = TYPES[t.type as keyof typeof TYPES];
  if (!kind || t.currency !== 'IDR') return null;
  const fee = t.fee && (t.fee.xendit_fee != null || t.fee.value_added_tax != null) ? (t.fee.xendit_fee ?? 0) + (t.fee.value_added_tax ?? 0) : null;
  const refund = kind === 'REFUND';
  return {
    kind,
    reference: refund ? null : (t.reference_id ?? null),
    vendorId: t.product_id ?? t.id,
    orderReference: refund ? (t.reference_id ?? null) : null,
    amount: t.amount,
    // An unknown status is not final: never mistaken for money moved.
    status: STATUS[t.status] ?? 'PENDING',
    at: new Date(t.created),
    fee,
  };
}

/** The query of one page: created in [from, to), the three types, after the last id seen. */
export function transactionsQuery(day: Pick<ReportDay, 'from' | 'to'>, afterId: string | null): string {
  const q = new URLSearchParams();
  for (const type of Object.keys(TYPES)) q.append('types', type);
  q.append('currency', 'IDR');
  q.append('created[gte]', day.from.toISOString());
  // lte is inclusive; the window's end is not.
  q.append('created[lte]', new Date(day.to.getTime() - 1).toISOString());
  q.append('limit', String(TRANSACTIONS_PAGE));
  if (afterId) q.append('after_id', afterId);
  return `/transactions?${q}`;
}

type Request = (method: 'GET' | 'POST', path: string) => Promise<Outcome<HttpAnswer>>;

export async function xenditReport(request: Request, day: ReportDay): Promise<VendorReport> {
  async function* lines(): AsyncIterable<VendorLine> {
    let afterId: string | null = null;
    for (;;) {
      const answer = await request('GET', transactionsQuery(day, afterId));
      if (answer.kind !== 'ok') throw new ReportUnavailable(`GET /transactions: ${answer.reason}`);
      if (answer.value.status !== 200) throw new ReportUnavailable(`GET /transactions: HTTP ${answer.value.status} ${JSON.stringify(answer.value.body ?? '').slice(0, 200)}`);
      const parsed = page.safeParse(answer.value.body);
      if (!parsed.success) throw new ReportUnavailable(`GET /transactions: unreadable page (${parsed.error.issues[0].path.join('.')}: ${parsed.error.issues[0].message})`);
      for (const t of parsed.data.data) {
        yield* toVendorLines(t);
      }
      const last = parsed.data.data.at(-1);
      if (!parsed.data.has_more || !last) return;
      afterId = last.id;
    }
  }
  return { source: 'list', lines: lines() };
}
