// The SNAP connector's reading of a day, on the provider's answers as the standard words them
// (the provider is a function answering each service here): a provider that refuses the
// Transaction History List is read record by record with the QR MPM query (its refundHistory
// gives the refunds) and the transfer status; history lines are read leniently; an answer Kasir
// cannot read makes the day unreadable rather than wrong.
import t from 'tap';
import type { VendorLine } from '../../gateways/gateway.ts';
import { historyLine, HISTORY_LIST_PATH, snapReport } from '../../gateways/snap/report.ts';
import { PATHS, verdictOf, type Verdict } from '../../gateways/snap/transforms.ts';
import { compareDay } from '../../db/recon.ts';

const settings = { merchantId: 'M1', terminalId: null, qrQueryServiceCode: '47' as const, bankBranchCode: null, sourceAccountNo: null };
const day = (sent: Parameters<typeof snapReport>[2]['sent']) => ({ date: '2026-11-20', from: new Date('2026-11-19T16:45:00Z'), to: new Date('2026-11-20T17:15:00Z'), sent });

async function collect(lines: AsyncIterable<VendorLine>) {
  const all: VendorLine[] = [];
  for await (const l of lines) all.push(l);
  return all;
}

t.test('history refused: each order and transfer Kasir sent is read on its own', async (t) => {
  const asked: string[] = [];
  const ask = async (path: string, payload: object): Promise<{ kind: 'ok'; value: Verdict }> => {
    asked.push(path);
    const p = payload as Record<string, string>;
    if (path === HISTORY_LIST_PATH) return { kind: 'ok', value: verdictOf(403, { responseCode: '4031201', responseMessage: 'Feature Not Allowed' }) };
    if (path === PATHS.qrQuery) {
      return {
        kind: 'ok',
        value: verdictOf(200, {
          responseCode: '2005100', originalPartnerReferenceNo: p.originalPartnerReferenceNo, originalReferenceNo: 'A1X', latestTransactionStatus: '00',
          paidTime: '2026-11-20T10:00:00+07:00', amount: { value: '150000.00', currency: 'IDR' },
          additionalInfo: { refundHistory: [{ refundNo: 'R1', partnerRefundNo: 'RFD-1', refundAmount: { value: '50000.00', currency: 'IDR' }, refundStatus: '00', refundDate: '2026-11-20T11:00:00+07:00' }] },
        }),
      };
    }
    if (path === PATHS.transferStatus) {
      return {
        kind: 'ok',
        value: verdictOf(200, { responseCode: '2003600', originalPartnerReferenceNo: p.originalPartnerReferenceNo, originalReferenceNo: 'T1', latestTransactionStatus: '03', amount: { value: '70000.00', currency: 'IDR' }, transactionDate: '2026-11-20T12:00:00+07:00' }),
      };
    }
    throw new Error(`unexpected ${path}`);
  };
  const report = await snapReport(ask, settings, day(async () => [
    { kind: 'PAYMENT', reference: 'ORD-1', vendorId: 'A1X' },
    { kind: 'REFUND', reference: 'RFD-1', vendorId: 'R1', orderReference: 'ORD-1', orderVendorId: 'A1X' },
    { kind: 'PAYOUT', reference: 'DSB-1', vendorId: 'T1' },
  ]));
  t.equal(report.source, 'records');
  const lines = await collect(report.lines);
  t.match(lines, [
    { kind: 'PAYMENT', reference: 'ORD-1', vendorId: 'A1X', amount: 150_000, status: 'SUCCESS', at: new Date('2026-11-20T03:00:00Z') },
    { kind: 'REFUND', reference: 'RFD-1', vendorId: 'R1', orderReference: 'ORD-1', amount: 50_000, status: 'SUCCESS' },
    { kind: 'PAYOUT', reference: 'DSB-1', vendorId: 'T1', amount: 70_000, status: 'PENDING' },
  ]);
  t.same(asked, [HISTORY_LIST_PATH, PATHS.qrQuery, PATHS.transferStatus], 'the order once, though its refund was sent too');
});

t.test('history lines are read leniently; a line Kasir cannot read stops the day', async (t) => {
  t.match(historyLine({ dateTime: '2026-11-20T10:00:00+07:00', amount: { value: '10000.00', currency: 'IDR' }, status: 'SUCCESS', type: 'SEND_MONEY', partnerReferenceNo: 'DSB-9', referenceNo: 'T9' }), {
    kind: 'PAYOUT', reference: 'DSB-9', vendorId: 'T9', amount: 10_000, status: 'SUCCESS', fee: null,
  });
  t.match(historyLine({ dateTime: '2026-11-20T10:00:00Z', amount: { value: '4965', currency: 'IDR' }, status: 'CLOSED', type: 'payment', additionalInfo: { partnerReferenceNo: 'ORD-9', feeAmount: { value: '35.00', currency: 'IDR' } } }), {
    kind: 'PAYMENT', reference: 'ORD-9', status: 'FAILED', fee: 35, amount: 5000,
  }, "a payment's amount is net of its fee: Kasir's gross is the two together");
  const unstated = historyLine({ dateTime: '2026-11-20T10:00:00Z', amount: { value: '4965', currency: 'IDR' }, status: 'SUCCESS', type: 'PAYMENT', partnerReferenceNo: 'ORD-8' });
  t.match(unstated, { amount: 4965, fee: null, netOfUnstatedFee: true }, 'net without a stated fee: recon adds the fee it assumes');
  t.equal(historyLine({ dateTime: '2026-11-20T10:00:00Z', amount: { value: '70000', currency: 'IDR' }, status: 'SUCCESS', type: 'SEND_MONEY', partnerReferenceNo: 'DSB-8', additionalInfo: { feeAmount: { value: '2500', currency: 'IDR' } } })?.amount, 70_000, "a transfer's amount is its own, the fee beside it");
  t.equal(historyLine({ dateTime: '2026-11-20T10:00:00Z', amount: { value: '5000.00', currency: 'IDR' }, status: 'SUCCESS', type: 'TOP_UP' }), null, 'not Kasir\'s');
  t.throws(() => historyLine({ dateTime: '2026-11-20T10:00:00Z', amount: { value: '5000.50', currency: 'IDR' }, status: 'SUCCESS', type: 'PAYMENT' }), { name: 'ReportUnavailable' }, 'a fraction is never rounded');

  const garbled = async (): Promise<{ kind: 'ok'; value: Verdict }> => ({ kind: 'ok', value: verdictOf(500, { responseCode: '5001200', responseMessage: 'General Error' }) });
  await t.rejects(snapReport(garbled, settings, day(async () => [])), { name: 'ReportUnavailable' }, 'a provider error is no empty day');
});

t.test('net history amounts against Kasir: no "amount differs" for a fee, a lost notify still repairable', async (t) => {
  const row = (reference: string, amount: number, raw_status: string) => ({
    subject: 'PAYMENT' as const, reference, id: reference, merchant_id: 'm', vendor_code: 'snap', vendors: ['snap'], vendor_id: `Q-${reference}`,
    amount, raw_status, at: raw_status === 'PAID' ? new Date('2026-11-20T03:00:00Z') : null, payout_kind: null, order_reference: null,
  });
  const entry = (reference: string, net: number, fee: number | null) => ({
    dateTime: '2026-11-20T10:00:00+07:00', amount: { value: `${net}.00`, currency: 'IDR' }, status: 'SUCCESS', type: 'PAYMENT',
    additionalInfo: { partnerReferenceNo: reference, referenceNo: `Q-${reference}`, ...(fee === null ? {} : { feeAmount: { value: `${fee}.00`, currency: 'IDR' } }) },
  });
  const comparison = compareDay({
    vendorCode: 'snap',
    day: '2026-11-20',
    dayRecords: [row('ORD-A', 100_000, 'PAID'), row('ORD-B', 200_000, 'PAID'), row('ORD-C', 50_000, 'PENDING')],
    otherRecords: [],
    // 0.7 %: A's fee stated, B's not (Kasir assumes 70 bps), C paid and its notify lost.
    lines: [historyLine(entry('ORD-A', 99_300, 700))!, historyLine(entry('ORD-B', 198_600, null))!, historyLine(entry('ORD-C', 49_650, 350))!],
    costs: { cost_payment_bps: 70, cost_payout: null, cost_refund: null },
  });
  t.match(comparison.matched.PAYMENT, { count: 2, amount: 300_000 }, 'both fee-bearing payments matched at their gross');
  t.match(comparison.differences, [{ kind: 'PAID_AT_VENDOR_ONLY', reference: 'ORD-C', vendorAmount: 50_000, repairable: { type: 'payment', refCode: 'ORD-C' } }], 'only the lost notify, repairable');
  t.equal(comparison.differences.length, 1);
});
