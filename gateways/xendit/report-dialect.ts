// The simulator's Xendit Transactions API (GET /xendit/transactions), written from Xendit's
// reference as its SDK states it (xendit-node balance_and_transaction/: GetAllTransactionsRequest,
// TransactionResponse, FeeResponse), independently of Kasir's reading (gateways/xendit/report.ts).
//
// Every money movement of the test account, one transaction each: PAYMENT for a paid QR (at its
// payment), DISBURSEMENT for a payout (at its acceptance: PENDING, then SUCCESS or FAILED), REFUND
// for a QR refund (its reference_id is the refunded payment's). Filtered by created[gte] and
// created[lte] (inclusive), types, statuses and reference_id; newest last; paged by after_id with
// has_more. Fees by the sandbox's price list: 0.7 % of a payment, 2,500 a payout, plus 11 % VAT.
//
// As Xendit writes what came back: a payment refunded in full within 24 h of being paid is VOIDED
// (help centre article 17209624920345: the payment is voided and its fee returned, instead of a
// REFUND), so its PAYMENT line says VOIDED and there is no REFUND line for it; a payout that
// succeeded and then bounced is a DISBURSEMENT REVERSED (TransactionStatuses: SUCCESS, PENDING,
// FAILED, REVERSED, VOIDED).
//
// Also the money faults (gateways/simulator/faults.ts) as Xendit would commit them: a payout
// accepted and lost, a payout paid with another amount, a refund made twice.
import { createHash, randomBytes } from 'node:crypto';
import { Router, type Request, type RequestHandler, type Response } from 'express';
import type { DialectContext } from '../simulator/dialect.ts';
import type { Fault } from '../simulator/faults.ts';
import { bpsOf } from '../simulator/report-dialect.ts';
import type { DisbursementRecord, QrRecord } from '../simulator/store.ts';

export { CHANGED_AMOUNT_DELTA } from '../simulator/report-dialect.ts';

const BUSINESS_ID = '5f27a14a9bf05c73dd040bc8';
const MAX_LIMIT = 50;
const VAT_BPS = 1100;

/** The dialect's refund records, as far as the transaction list needs them. */
interface Refund {
  id: string;
  paymentId: string;
  reference: string;
  amount: number;
  status: 'PENDING' | 'SUCCEEDED' | 'FAILED';
  created: Date;
}

interface Transaction {
  id: string;
  product_id: string;
  type: 'PAYMENT' | 'DISBURSEMENT' | 'REFUND';
  status: 'SUCCESS' | 'PENDING' | 'FAILED' | 'REVERSED' | 'VOIDED';
  channel_category: string;
  channel_code: string | null;
  reference_id: string;
  account_identifier: string | null;
  currency: 'IDR';
  amount: number;
  cashflow: 'MONEY_IN' | 'MONEY_OUT';
  settlement_status: 'PENDING' | 'SETTLED' | null;
  business_id: string;
  fee: { xendit_fee: number; value_added_tax: number; xendit_withholding_tax: number; third_party_withholding_tax: number; status: string };
  created: string;
  updated: string;
}

const txnId = (productId: string) => `txn_${createHash('sha256').update(productId).digest('hex').slice(0, 24)}`;

function fee(xenditFee: number, status: string) {
  return { xendit_fee: xenditFee, value_added_tax: bpsOf(xenditFee, VAT_BPS), xendit_withholding_tax: 0, third_party_withholding_tax: 0, status };
}

/** A full refund within this long of the payment voids the payment instead. */
const VOID_WINDOW_MS = 24 * 3600_000;

/** The refund that voids a paid QR's payment: one that completed the whole amount within 24 h. */
function voidingRefund(qr: QrRecord, paymentId: string, refunds: Iterable<Refund>): Refund | null {
  for (const r of refunds) {
    if (r.paymentId === paymentId && r.status === 'SUCCEEDED' && r.amount === qr.amount && r.created.getTime() - qr.paidAt!.getTime() < VOID_WINDOW_MS) return r;
  }
  return null;
}

function payment(qr: QrRecord, paymentId: string, voidedBy: Refund | null): Transaction {
  const at = qr.paidAt!.toISOString();
  return {
    id: txnId(paymentId), product_id: paymentId, type: 'PAYMENT', status: voidedBy ? 'VOIDED' : 'SUCCESS', channel_category: 'QR_CODE', channel_code: 'ID_DANA',
    reference_id: qr.reference, account_identifier: null, currency: 'IDR', amount: qr.amount, cashflow: 'MONEY_IN', settlement_status: 'PENDING',
    business_id: BUSINESS_ID, fee: voidedBy ? fee(0, 'REVERSED') : fee(bpsOf(qr.amount, 70), 'COMPLETED'), created: at, updated: voidedBy ? voidedBy.created.toISOString() : at,
  };
}

function payout(d: DisbursementRecord, reversed: boolean): Transaction {
  const status = d.status === 'PROCESSING' ? 'PENDING' : reversed ? 'REVERSED' : d.status;
  return {
    id: txnId(d.id), product_id: d.id, type: 'DISBURSEMENT', status, channel_category: d.channel === 'BANK' ? 'BANK' : 'EWALLET',
    channel_code: `ID_${d.bankCode ?? d.ewalletCode}`, reference_id: d.reference, account_identifier: d.accountNumber, currency: 'IDR',
    amount: d.amount, cashflow: 'MONEY_OUT', settlement_status: null, business_id: BUSINESS_ID,
    fee: fee(status === 'FAILED' ? 0 : 2500, status === 'SUCCESS' ? 'COMPLETED' : status === 'FAILED' ? 'CANCELED' : 'PENDING'),
    created: d.createdAt.toISOString(), updated: d.updatedAt.toISOString(),
  };
}

function refund(r: Refund): Transaction {
  const status = r.status === 'SUCCEEDED' ? 'SUCCESS' : r.status;
  return {
    id: txnId(r.id), product_id: r.id, type: 'REFUND', status, channel_category: 'QR_CODE', channel_code: 'ID_DANA', reference_id: r.reference,
    account_identifier: null, currency: 'IDR', amount: r.amount, cashflow: 'MONEY_OUT', settlement_status: null, business_id: BUSINESS_ID,
    fee: fee(0, 'NOT_APPLICABLE'), created: r.created.toISOString(), updated: r.created.toISOString(),
  };
}

const list = (value: unknown): string[] => (value === undefined ? [] : Array.isArray(value) ? value.map(String) : [String(value)]);

/** GET /transactions, mounted on the Xendit dialect's router (before its 404). */
export function xenditTransactions(
  ctx: DialectContext,
  dialect: { refunds: ReadonlyMap<string, Refund>; reversed: ReadonlySet<string>; paymentIdOf(qr: QrRecord): string; authenticate: RequestHandler[] },
): Router {
  const { authenticate } = dialect;
  const refuse = (res: Response, message: string) => void res.status(400).json({ error_code: 'API_VALIDATION_ERROR', message });

  const router = Router();
  router.get('/transactions', ...authenticate, (req: Request, res: Response) => {
    const q = req.query as Record<string, unknown>;
    const bound = (name: string) => {
      const value = q[name];
      if (value === undefined) return null;
      const at = typeof value === 'string' ? Date.parse(value) : NaN;
      return Number.isNaN(at) ? undefined : at;
    };
    const gte = bound('created[gte]');
    const lte = bound('created[lte]');
    if (gte === undefined || lte === undefined) return refuse(res, 'created[gte] and created[lte] must be ISO 8601 dates');
    const limit = q.limit === undefined ? 10 : Number(q.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) return refuse(res, `limit must be 1..${MAX_LIMIT}`);
    const types = list(q.types);
    const statuses = list(q.statuses);
    const referenceId = typeof q.reference_id === 'string' ? q.reference_id : null;
    if (q.currency !== undefined && q.currency !== 'IDR') return void ctx.reply(res, 200, { data: [], has_more: false, links: [] });

    const all: Transaction[] = [];
    const voiding = new Set<string>();
    for (const qr of ctx.store.qrs.values()) {
      if (qr.dialect !== 'xendit' || !qr.paidAt) continue;
      const paymentId = dialect.paymentIdOf(qr);
      const voidedBy = voidingRefund(qr, paymentId, dialect.refunds.values());
      if (voidedBy) voiding.add(voidedBy.id);
      all.push(payment(qr, paymentId, voidedBy));
    }
    for (const d of ctx.store.disbursements.values()) if (d.dialect === 'xendit') all.push(payout(d, dialect.reversed.has(d.id)));
    for (const r of dialect.refunds.values()) if (!voiding.has(r.id)) all.push(refund(r));
    const selected = all
      .filter((x) => (gte === null || Date.parse(x.created) >= gte) && (lte === null || Date.parse(x.created) <= lte))
      .filter((x) => (types.length === 0 || types.includes(x.type)) && (statuses.length === 0 || statuses.includes(x.status)))
      .filter((x) => referenceId === null || x.reference_id === referenceId)
      .sort((a, b) => Date.parse(a.created) - Date.parse(b.created) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const afterId = typeof q.after_id === 'string' ? q.after_id : null;
    const start = afterId === null ? 0 : selected.findIndex((x) => x.id === afterId) + 1;
    if (afterId !== null && start === 0) return refuse(res, 'after_id is not a transaction of this list');
    const data = selected.slice(start, start + limit);
    ctx.reply(res, 200, { data, has_more: start + limit < selected.length, links: [] } as Record<string, unknown>);
  });
  return router;
}

/**
 * A refund Xendit made twice (the double_refund fault): a second refund of the same payment and
 * amount under its own id, completed like the first.
 */
export function twinRefund<R extends { id: string }>(first: R): R {
  return { ...first, id: `qrrf_${randomBytes(12).toString('hex')}` };
}

/** The money fault of a payout request, if any. */
export const moneyFault = (res: Response) => (res.locals.fault as Fault | undefined)?.mode;
