// The simulator's SNAP Transaction History List (service 12, POST /snap/v1.0/transaction-history-list),
// as providers that offer it to merchants publish it (Midtrans's SNAP reporting services, Finpay's
// e-money history list), independently of Kasir's reading (gateways/snap/report.ts). Mounted as a
// service of the SNAP dialect, so it is signed, authorised and faulted like every other.
//
// The body: fromDateTime and toDateTime (ISO 8601, inclusive), pageSize (1..50, default 10),
// pageNumber (from 0). The answer: detailData[], one line per movement of money of the account,
// oldest first: dateTime (+07:00), amount {value, currency} (a payment's net of its fee, as
// Midtrans documents it: what reached the account; a refund's and a transfer's their own), status (SUCCESS; INIT while a transfer
// is in flight; CLOSED when it failed), type (PAYMENT, REFUND, DISBURSEMENT), remark, and
// additionalInfo {partnerReferenceNo, referenceNo, and for a refund partnerRefundNo and
// originalPartnerReferenceNo; feeAmount by the sandbox's price list: 0.7 % of a payment, 2,500 a
// transfer}.
import type { Request, Response } from 'express';
import type { DialectContext } from '../simulator/dialect.ts';
import { bpsOf } from '../simulator/report-dialect.ts';

const jakarta = (at: Date) => `${new Date(at.getTime() + 7 * 3600_000).toISOString().slice(0, 19)}+07:00`;
const money = (rupiah: number) => ({ value: `${rupiah}.00`, currency: 'IDR' });
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?(Z|[+-]\d{2}:\d{2})$/;

interface Line {
  at: Date;
  id: string;
  entry: Record<string, unknown>;
}

export function historyList(ctx: DialectContext) {
  return (req: Request, res: Response) => {
    let body: Record<string, unknown>;
    try {
      body = JSON.parse((req.body as Buffer).toString('utf8')) as Record<string, unknown>;
    } catch {
      body = {};
    }
    const refuse = (message: string) => ctx.reply(res, 400, { responseCode: '4001201', responseMessage: `Invalid Field Format ${message}` });
    const from = typeof body.fromDateTime === 'string' && TIMESTAMP.test(body.fromDateTime) ? Date.parse(body.fromDateTime) : NaN;
    const to = typeof body.toDateTime === 'string' && TIMESTAMP.test(body.toDateTime) ? Date.parse(body.toDateTime) : NaN;
    if (Number.isNaN(from) || Number.isNaN(to)) return refuse('fromDateTime/toDateTime');
    const pageSize = body.pageSize === undefined ? 10 : Number(body.pageSize);
    const pageNumber = body.pageNumber === undefined ? 0 : Number(body.pageNumber);
    if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 50) return refuse('pageSize');
    if (!Number.isInteger(pageNumber) || pageNumber < 0) return refuse('pageNumber');

    const lines: Line[] = [];
    const inWindow = (at: Date | null) => at !== null && at.getTime() >= from && at.getTime() <= to;
    for (const qr of ctx.store.qrs.values()) {
      if (qr.dialect !== 'snap' || !inWindow(qr.paidAt)) continue;
      lines.push({
        at: qr.paidAt!,
        id: qr.id,
        entry: {
          dateTime: jakarta(qr.paidAt!), amount: money(qr.amount - bpsOf(qr.amount, 70)), remark: `QRIS ${qr.reference}`, status: 'SUCCESS', type: 'PAYMENT',
          additionalInfo: { partnerReferenceNo: qr.reference, referenceNo: qr.id, feeAmount: money(bpsOf(qr.amount, 70)) },
        },
      });
    }
    for (const r of ctx.store.refunds.values()) {
      const qr = ctx.store.qrs.get(r.reference);
      if (qr?.dialect !== 'snap' || !inWindow(r.createdAt)) continue;
      lines.push({
        at: r.createdAt,
        id: r.id,
        entry: {
          dateTime: jakarta(r.createdAt), amount: money(r.amount), remark: `Refund ${r.refundReference}`, status: 'SUCCESS', type: 'REFUND',
          additionalInfo: { partnerReferenceNo: r.refundReference, partnerRefundNo: r.refundReference, referenceNo: r.id, originalPartnerReferenceNo: qr.reference },
        },
      });
    }
    for (const d of ctx.store.disbursements.values()) {
      if (d.dialect !== 'snap' || !inWindow(d.createdAt)) continue;
      lines.push({
        at: d.createdAt,
        id: d.id,
        entry: {
          dateTime: jakarta(d.createdAt), amount: money(d.amount), remark: `Transfer ${d.reference}`,
          status: d.status === 'SUCCESS' ? 'SUCCESS' : d.status === 'FAILED' ? 'CLOSED' : 'INIT', type: 'DISBURSEMENT',
          additionalInfo: { partnerReferenceNo: d.reference, referenceNo: d.id, ...(d.status === 'SUCCESS' ? { feeAmount: money(2500) } : {}) },
        },
      });
    }
    lines.sort((a, b) => a.at.getTime() - b.at.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const detailData = lines.slice(pageNumber * pageSize, (pageNumber + 1) * pageSize).map((l) => l.entry);
    ctx.reply(res, 200, { responseCode: '2001200', responseMessage: 'Successful', detailData });
  };
}
