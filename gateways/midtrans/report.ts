// Kasir's reading of a day at Midtrans (docs/vendors/midtrans.md, "Reconciliation").
//
// Core has no list of transactions Kasir can read with its server key, only each transaction's
// status (GET /v2/{order_id}/status). So every order Kasir sent Midtrans around the day is read
// again, and each answer becomes lines: the payment (settlement or capture: paid; pending: not
// yet; expire, cancel, deny, failure: not paid) and the refunds its `refunds[]` lists (refund_key
// is Kasir's refund reference). An order Midtrans does not know gives no line.
//
// Iris payouts, when the vendor has Iris keys: each payout Kasir holds a reference_no for is read
// (GET /api/v1/payouts/{reference_no}), and Iris's statement of the days (GET /api/v1/statements,
// the midtrans-go SDK's GetTransactionHistory) adds what a per-payout read cannot show: a debit
// for a reference_no Kasir does not know, a second debit of one it does (paid out twice), and
// money the bank sent back. The statement takes its dates as a JSON body on the GET, as both
// official SDKs send them (the Node client says so: not query parameters); an Iris that ignored
// a query would answer another window and hide a day's double debit.
// A statement line carries Iris's reference_no, never Kasir's reference (it is in the payout's
// notes), and no status of its own: a "Payout" debit is money out; a "Refund" credit (or a credit
// of a "Payout" line) is a payout's money back, whatever its read still says [I].
import { ReportUnavailable, type Outcome, type ReportDay, type SentRecord, type VendorLine, type VendorReport } from '../gateway.ts';
import type { MidtransAnswer } from './client.ts';
import { coreVerdict, fromMidtransAmount, parseJakartaTime, text, toPayoutStatus } from './transforms.ts';
import { inBatches } from '../results.ts';

const READS_IN_FLIGHT = 8;

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

type Call = (method: 'GET' | 'POST', path: string, payload?: object) => Promise<Outcome<MidtransAnswer>>;

export interface MidtransReader {
  core: Call;
  /** Iris with the creator key; null without Iris keys. */
  iris: Call | null;
}

const PAYMENT_STATUS: Readonly<Record<string, VendorLine['status']>> = {
  settlement: 'SUCCESS',
  capture: 'SUCCESS',
  refund: 'SUCCESS',
  partial_refund: 'SUCCESS',
  chargeback: 'SUCCESS',
  partial_chargeback: 'SUCCESS',
  expire: 'FAILED',
  cancel: 'FAILED',
  deny: 'FAILED',
  failure: 'FAILED',
};

function unreadable(what: string, why: string): never {
  throw new ReportUnavailable(`${what}: ${why}`);
}

/** The lines of one Core status answer: the payment and its refunds. */
export function statusLines(reference: string, body: Record<string, unknown>): VendorLine[] {
  const amount = fromMidtransAmount(body.gross_amount);
  if (body.order_id !== reference || amount === null) unreadable(`status of ${reference}`, 'another order or an unreadable amount');
  const status = PAYMENT_STATUS[String(body.transaction_status)] ?? 'PENDING';
  const at = parseJakartaTime(body.settlement_time) ?? parseJakartaTime(body.transaction_time) ?? new Date(0);
  const lines: VendorLine[] = [{ kind: 'PAYMENT', reference, vendorId: text(body.transaction_id), amount, status, at, fee: null }];
  for (const r of Array.isArray(body.refunds) ? body.refunds.filter(isRecord) : []) {
    const refundAmount = fromMidtransAmount(r.refund_amount);
    const id = r.refund_chargeback_id;
    if (refundAmount === null) unreadable(`refunds of ${reference}`, 'an unreadable refund_amount');
    lines.push({
      kind: 'REFUND',
      reference: text(r.refund_key),
      vendorId: typeof id === 'number' || typeof id === 'string' ? String(id) : null,
      orderReference: reference,
      amount: refundAmount,
      status: 'SUCCESS',
      at: parseJakartaTime(r.created_at) ?? at,
      fee: null,
    });
  }
  return lines;
}


async function readOrder(core: Call, reference: string): Promise<VendorLine[]> {
  const answer = await core('GET', `/v2/${encodeURIComponent(reference)}/status`);
  if (answer.kind !== 'ok') unreadable(`status of ${reference}`, answer.reason);
  const v = coreVerdict(answer.value.status, answer.value.body);
  if (v.kind === 'not_found') return [];
  if (v.kind !== 'success') unreadable(`status of ${reference}`, v.reason);
  return statusLines(reference, v.body);
}

async function readPayout(iris: Call, referenceNo: string): Promise<VendorLine[]> {
  const answer = await iris('GET', `/payouts/${encodeURIComponent(referenceNo)}`);
  if (answer.kind !== 'ok') unreadable(`payout ${referenceNo}`, answer.reason);
  const { status, body } = answer.value;
  if (status === 404) return [];
  if (status !== 200 || !isRecord(body)) unreadable(`payout ${referenceNo}`, `HTTP ${status}`);
  const amount = fromMidtransAmount(body.amount);
  if (amount === null || (body.reference_no !== undefined && body.reference_no !== referenceNo)) unreadable(`payout ${referenceNo}`, 'another payout or an unreadable amount');
  const kasir = toPayoutStatus(body.status);
  const at = typeof body.created_at === 'string' && !Number.isNaN(Date.parse(body.created_at)) ? new Date(body.created_at) : new Date(0);
  return [{ kind: 'PAYOUT', reference: text(body.notes), vendorId: referenceNo, amount, status: kasir === 'SUCCESS' || kasir === 'FAILED' ? kasir : 'PENDING', at, fee: null }];
}

/** Iris's statement lines between two WIB dates: payouts out (debit) and back (credit). */
const wibDate = (at: Date) => new Date(at.getTime() + 7 * 3600_000).toISOString().slice(0, 10);

/**
 * Reads today's statement as reconciliation will (`ops vendor:check`): resolves to how many
 * lines it holds, or throws ReportUnavailable saying why not.
 */
export async function probeStatement(iris: Call): Promise<number> {
  const today = wibDate(new Date());
  return (await readStatement(iris, today, today)).length;
}

async function readStatement(iris: Call, fromDate: string, toDate: string): Promise<Array<{ referenceNo: string; amount: number; debit: boolean; at: Date }>> {
  const answer = await iris('GET', '/statements', { from_date: fromDate, to_date: toDate });
  if (answer.kind !== 'ok') unreadable('Iris statements', answer.reason);
  const { status, body } = answer.value;
  if (status !== 200 || !Array.isArray(body)) unreadable('Iris statements', `HTTP ${status}`);
  return body.filter(isRecord).flatMap((line) => {
    const referenceNo = text(line.reference_no);
    const type = String(line.type).toLowerCase();
    const debit = String(line.status).toLowerCase() === 'debit';
    // Payout debits and credits, and Refund credits (a payout the bank returned); fees, top-ups
    // and manual lines move no payout of Kasir's.
    if (!referenceNo || !(type === 'payout' || (type === 'refund' && !debit))) return [];
    const amount = fromMidtransAmount(line.amount);
    const at = typeof line.created_at === 'string' ? new Date(line.created_at) : null;
    if (amount === null || !at || Number.isNaN(at.getTime())) unreadable('Iris statements', `an unreadable line for ${referenceNo}`);
    return [{ referenceNo, amount, debit, at }];
  });
}


export async function midtransReport(reader: MidtransReader, day: ReportDay): Promise<VendorReport> {
  async function* lines(): AsyncIterable<VendorLine> {
    const sent: readonly SentRecord[] = await day.sent();
    // Each order once: those sent, and those whose refunds were.
    const orders = [...new Set(sent.flatMap((r) => (r.kind === 'PAYMENT' ? [r.reference] : r.kind === 'REFUND' && r.orderReference ? [r.orderReference] : [])))];
    for (const batch of await inBatches(orders, (reference) => readOrder(reader.core, reference), READS_IN_FLIGHT)) yield* batch;
    if (!reader.iris) return;
    const referenceNos = [...new Set(sent.flatMap((r) => (r.kind === 'PAYOUT' && r.vendorId ? [r.vendorId] : [])))];
    const read = new Set(referenceNos);
    const statement = (await readStatement(reader.iris, wibDate(day.from), wibDate(new Date(day.to.getTime() - 1)))).filter((s) => s.at >= day.from && s.at < day.to);
    const returned = new Map(statement.filter((s) => !s.debit).map((s) => [s.referenceNo, s]));
    for (const batch of await inBatches(referenceNos, (referenceNo) => readPayout(reader.iris!, referenceNo), READS_IN_FLIGHT)) {
      for (const line of batch) {
        // Money back on a payout whose read still says completed: the statement is the later word.
        const back = line.status === 'SUCCESS' && line.vendorId !== null ? returned.get(line.vendorId) : undefined;
        yield back ? { ...line, status: 'FAILED', at: back.at } : line;
      }
    }
    const debits = new Map<string, typeof statement>();
    for (const s of statement) {
      if (!s.debit) {
        // Money back on a payout Kasir did not read: its last word is that it failed.
        if (!read.has(s.referenceNo)) yield { kind: 'PAYOUT', reference: null, vendorId: s.referenceNo, amount: s.amount, status: 'FAILED', at: s.at, fee: null };
        continue;
      }
      debits.set(s.referenceNo, [...(debits.get(s.referenceNo) ?? []), s]);
    }
    for (const [referenceNo, out] of debits) {
      // A payout read on its own already has its line: only a further debit of it is news.
      for (const s of read.has(referenceNo) ? out.slice(1) : out) yield { kind: 'PAYOUT', reference: null, vendorId: referenceNo, amount: s.amount, status: 'SUCCESS', at: s.at, fee: null };
    }
  }
  return { source: reader.iris ? 'records+statement' : 'records', lines: lines() };
}
