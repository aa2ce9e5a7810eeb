// Kasir's reading of a day at a SNAP BI provider (docs/vendors/snap.md, "Reconciliation").
//
// Where the provider offers it, the standard's Transaction History List (service 12,
// POST /v1.0/transaction-history-list: fromDateTime, toDateTime, pageSize at most 50,
// pageNumber from 0; its answer's detailData[] holds one line each: dateTime, amount, status,
// type, additionalInfo), read page by page until a page comes back short. Providers word its
// lines their own way, so they are read leniently: Kasir's reference from partnerReferenceNo
// (top level or additionalInfo; a refund's partnerRefundNo), the provider's id from referenceNo,
// a fee from additionalInfo.feeAmount; SUCCESS is money moved, INIT and PENDING not yet, CLOSED,
// CANCELLED and FAILED that it did not; types PAYMENT, REFUND, and DISBURSEMENT, SEND_MONEY or
// TRANSFER for payouts. Other types (top-ups, withdrawals) are not Kasir's. A payment's amount is
// what reached the account, net of the fee (Midtrans: "Net amount of the transaction"): Kasir's
// gross is that plus feeAmount, or plus the fee Kasir assumes where the line states none.
//
// A provider that refuses the service (not offered to this partner) is read record by record
// instead, with the services Kasir uses anyway: QR MPM query for each order Kasir sent it (its
// additionalInfo.refundHistory gives the refunds) and transfer status for each payout.
import { ReportUnavailable, type Outcome, type ReportDay, type SentRecord, type VendorLine, type VendorReport } from '../gateway.ts';
import { fromSnapAmount, fromTransferStatus, jakartaTimestamp, parseTimestamp, PATHS, toQueryRequest, toQrisStatus, toTransferStatusRequest, type SnapSettings, type Verdict } from './transforms.ts';
import { inBatches } from '../results.ts';

export const HISTORY_LIST_PATH = '/v1.0/transaction-history-list';
export const HISTORY_PAGE = 50;
const MAX_PAGES = 100_000;
const READS_IN_FLIGHT = 8;

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const text = (value: unknown): string | null => (typeof value === 'string' && value.length > 0 ? value : null);

type Ask = (path: string, payload: object) => Promise<Outcome<Verdict>>;

const KINDS: Readonly<Record<string, VendorLine['kind']>> = { PAYMENT: 'PAYMENT', REFUND: 'REFUND', DISBURSEMENT: 'PAYOUT', SEND_MONEY: 'PAYOUT', TRANSFER: 'PAYOUT' };
const STATUSES: Readonly<Record<string, VendorLine['status']>> = { SUCCESS: 'SUCCESS', INIT: 'PENDING', PENDING: 'PENDING', CLOSED: 'FAILED', CANCELLED: 'FAILED', FAILED: 'FAILED' };

function unreadable(what: string, why: string): never {
  throw new ReportUnavailable(`${what}: ${why}`);
}

/** One detailData entry as a line; null for a type that is not Kasir's. */
export function historyLine(entry: Record<string, unknown>): VendorLine | null {
  const kind = KINDS[String(entry.type).toUpperCase()];
  if (!kind) return null;
  const info = isRecord(entry.additionalInfo) ? entry.additionalInfo : {};
  const amount = fromSnapAmount(entry.amount);
  const at = parseTimestamp(entry.dateTime);
  if (amount === null || !at) unreadable('transaction history', `an unreadable line (${JSON.stringify(entry).slice(0, 200)})`);
  const partner = text(entry.partnerReferenceNo) ?? text(info.partnerReferenceNo);
  const fee = isRecord(info.feeAmount) ? fromSnapAmount(info.feeAmount) : null;
  // A payer paid the gross; the account received it less the fee. A refund and a transfer move
  // their own amount, the fee beside it [I].
  const net = kind === 'PAYMENT';
  return {
    kind,
    reference: kind === 'REFUND' ? (text(info.partnerRefundNo) ?? partner) : partner,
    vendorId: text(entry.referenceNo) ?? text(info.referenceNo),
    orderReference: kind === 'REFUND' ? (text(info.originalPartnerReferenceNo) ?? null) : null,
    amount: net && fee !== null ? amount + fee : amount,
    status: STATUSES[String(entry.status).toUpperCase()] ?? 'PENDING',
    at,
    fee,
    ...(net && fee === null ? { netOfUnstatedFee: true } : {}),
  };
}


/** An order's lines from its QR MPM query: the payment and the refunds its history lists. */
async function readOrder(ask: Ask, settings: SnapSettings, reference: string, vendorOrderId: string): Promise<VendorLine[]> {
  const asked = await ask(PATHS.qrQuery, toQueryRequest(reference, vendorOrderId, settings));
  if (asked.kind !== 'ok') unreadable(`query of ${reference}`, asked.reason);
  const v = asked.value;
  if (v.kind === 'refused' && v.http === 404 && v.case === '01') return [];
  if (v.kind !== 'success') unreadable(`query of ${reference}`, v.reason);
  const body = v.body;
  const amount = fromSnapAmount(body.amount);
  if (amount === null) unreadable(`query of ${reference}`, 'an unreadable amount');
  const qr = toQrisStatus(body.latestTransactionStatus);
  const info = isRecord(body.additionalInfo) ? body.additionalInfo : {};
  const at = parseTimestamp(body.paidTime) ?? parseTimestamp(info.paidTime) ?? new Date(0);
  const lines: VendorLine[] = [
    { kind: 'PAYMENT', reference, vendorId: text(body.originalReferenceNo), amount, status: qr === 'PAID' ? 'SUCCESS' : qr === 'PENDING' ? 'PENDING' : 'FAILED', at, fee: null },
  ];
  for (const r of Array.isArray(info.refundHistory) ? info.refundHistory.filter(isRecord) : []) {
    const refundAmount = fromSnapAmount(r.refundAmount);
    if (refundAmount === null) unreadable(`refunds of ${reference}`, 'an unreadable refundAmount');
    lines.push({
      kind: 'REFUND',
      reference: text(r.partnerRefundNo),
      vendorId: text(r.refundNo),
      orderReference: reference,
      amount: refundAmount,
      status: r.refundStatus === '00' ? 'SUCCESS' : r.refundStatus === '06' || r.refundStatus === '09' ? 'FAILED' : 'PENDING',
      at: parseTimestamp(r.refundDate) ?? at,
      fee: null,
    });
  }
  return lines;
}

async function readTransfer(ask: Ask, reference: string): Promise<VendorLine[]> {
  const asked = await ask(PATHS.transferStatus, toTransferStatusRequest(reference));
  if (asked.kind !== 'ok') unreadable(`transfer status of ${reference}`, asked.reason);
  const v = asked.value;
  if (v.kind === 'refused' && v.http === 404 && v.case === '01') return [];
  if (v.kind !== 'success') unreadable(`transfer status of ${reference}`, v.reason);
  const status = fromTransferStatus(v.body, reference);
  const amount = fromSnapAmount(v.body.amount);
  if (!status || amount === null) unreadable(`transfer status of ${reference}`, 'another reference or an unreadable amount');
  if (status.status === 'NOT_FOUND') return [];
  return [{ kind: 'PAYOUT', reference, vendorId: status.vendorDisbursementId, amount, status: status.status === 'PROCESSING' ? 'PENDING' : status.status, at: parseTimestamp(v.body.transactionDate) ?? new Date(0), fee: null }];
}

async function readRecords(ask: Ask, settings: SnapSettings, sent: readonly SentRecord[]): Promise<VendorLine[]> {
  // The QR query names the order by the provider's id (originalReferenceNo, mandatory): an order
  // the provider never gave an id for was never shown to a payer through it.
  const orders = new Map<string, string>();
  for (const r of sent) {
    if (r.kind === 'PAYMENT' && r.vendorId) orders.set(r.reference, r.vendorId);
    if (r.kind === 'REFUND' && r.orderReference && r.orderVendorId) orders.set(r.orderReference, r.orderVendorId);
  }
  const payouts = sent.filter((r) => r.kind === 'PAYOUT').map((r) => r.reference);
  return [
    ...(await inBatches([...orders], ([reference, vendorOrderId]) => readOrder(ask, settings, reference, vendorOrderId), READS_IN_FLIGHT)).flat(),
    ...(await inBatches(payouts, (reference) => readTransfer(ask, reference), READS_IN_FLIGHT)).flat(),
  ];
}

export async function snapReport(ask: Ask, settings: SnapSettings, day: ReportDay): Promise<VendorReport> {
  const page = async (pageNumber: number) => {
    const asked = await ask(HISTORY_LIST_PATH, {
      fromDateTime: jakartaTimestamp(day.from),
      toDateTime: jakartaTimestamp(new Date(day.to.getTime() - 1000)),
      pageSize: HISTORY_PAGE,
      pageNumber,
    });
    if (asked.kind !== 'ok') unreadable(`transaction history page ${pageNumber}`, asked.reason);
    return asked.value;
  };
  const first = await page(0);
  // Not offered to this partner (or not at all): the services Kasir uses anyway, record by record.
  if (first.kind === 'refused') return { source: 'records', lines: (async function* () { yield* await readRecords(ask, settings, await day.sent()); })() };
  if (first.kind !== 'success') unreadable('transaction history page 0', first.reason);
  async function* lines(): AsyncIterable<VendorLine> {
    let v: Verdict = first;
    for (let n = 0; n < MAX_PAGES; n++) {
      if (n > 0) v = await page(n);
      if (v.kind !== 'success') unreadable(`transaction history page ${n}`, v.reason);
      const detail = Array.isArray(v.body.detailData) ? v.body.detailData.filter(isRecord) : [];
      for (const entry of detail) {
        const line = historyLine(entry);
        if (line) yield line;
      }
      if (detail.length < HISTORY_PAGE) return;
    }
    unreadable('transaction history', `more than ${MAX_PAGES} pages`);
  }
  return { source: 'list', lines: lines() };
}
