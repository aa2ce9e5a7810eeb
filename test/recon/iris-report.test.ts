// The Midtrans connector's reading of Iris's statement (issue 36 finding 5), on Iris's answers as
// its documents word them (Iris is a function answering each call here): the dates go as a JSON
// body on the GET, as both official SDKs send them (an Iris reading only the body answers another
// window to a query string, so a day's double debit would go unseen), a second debit of a payout
// is reported, and a "Refund" credit (the bank sent a payout back) is seen even where the
// payout's own read still says completed.
import t from 'tap';
import type { Outcome, VendorLine } from '../../gateways/gateway.ts';
import type { MidtransAnswer } from '../../gateways/midtrans/client.ts';
import { midtransReport } from '../../gateways/midtrans/report.ts';

const day = { date: '2026-11-20', from: new Date('2026-11-19T16:45:00Z'), to: new Date('2026-11-20T17:15:00Z') };

async function collect(lines: AsyncIterable<VendorLine>) {
  const all: VendorLine[] = [];
  for await (const l of lines) all.push(l);
  return all;
}

const payout = (referenceNo: string, notes: string, amount: number) => ({ reference_no: referenceNo, notes, amount: `${amount}.00`, status: 'completed', created_at: '2026-11-20T03:00:00Z' });
const line = (referenceNo: string, type: string, status: 'debit' | 'credit', amount: number, at: string) => ({ reference_no: referenceNo, type, status, amount: `${amount}.00`, created_at: at, account: 'bca', beneficiary_name: 'BUDI', beneficiary_account: '1111' });

t.test('the statement is asked with a JSON body; doubles and Refund credits are lines', async (t) => {
  const asked: Array<{ path: string; payload: unknown }> = [];
  const iris = async (method: 'GET' | 'POST', path: string, payload?: object): Promise<Outcome<MidtransAnswer>> => {
    asked.push({ path, payload });
    if (path === '/payouts/irisA') return { kind: 'ok', value: { status: 200, body: payout('irisA', 'DSB-A', 70_000) } };
    if (path === '/payouts/irisB') return { kind: 'ok', value: { status: 200, body: payout('irisB', 'DSB-B', 40_000) } };
    if (path.startsWith('/statements')) {
      const body = (payload ?? {}) as Record<string, unknown>;
      // Iris reads its dates from the body only; without them it answers today's lines.
      if (typeof body.from_date !== 'string' || typeof body.to_date !== 'string' || body.from_date > '2026-11-20' || body.to_date < '2026-11-20') return { kind: 'ok', value: { status: 200, body: [] } };
      return {
        kind: 'ok',
        value: {
          status: 200,
          body: [
            line('irisA', 'Payout', 'debit', 70_000, '2026-11-20T03:00:00Z'),
            line('irisA', 'Payout', 'debit', 70_000, '2026-11-20T03:05:00Z'),
            line('irisA', 'Payout fee', 'debit', 5_000, '2026-11-20T03:05:00Z'),
            line('irisB', 'Payout', 'debit', 40_000, '2026-11-20T03:00:00Z'),
            line('irisB', 'Refund', 'credit', 40_000, '2026-11-20T09:00:00Z'),
            line('irisZ', 'Refund', 'credit', 15_000, '2026-11-20T10:00:00Z'),
            { type: 'Topup', status: 'credit', amount: '1000000.00', created_at: '2026-11-20T01:00:00Z' },
          ],
        },
      };
    }
    throw new Error(`unexpected ${path}`);
  };
  const core = async (): Promise<Outcome<MidtransAnswer>> => {
    throw new Error('no order was sent');
  };
  const report = await midtransReport(
    { core, iris },
    {
      ...day,
      sent: async () => [
        { kind: 'PAYOUT', reference: 'DSB-A', vendorId: 'irisA' },
        { kind: 'PAYOUT', reference: 'DSB-B', vendorId: 'irisB' },
      ],
    },
  );
  const lines = await collect(report.lines);
  const statement = asked.find((a) => a.path.startsWith('/statements'));
  t.same(statement, { path: '/statements', payload: { from_date: '2026-11-19', to_date: '2026-11-21' } }, 'the WIB dates of the widened day in a JSON body, none in the query');
  t.match(
    lines.filter((l) => l.vendorId === 'irisA'),
    [{ reference: 'DSB-A', status: 'SUCCESS', amount: 70_000 }, { reference: null, status: 'SUCCESS', amount: 70_000 }],
    'the second debit of a payout is a second line (paid out twice); its fee line is not a payout',
  );
  t.match(lines.filter((l) => l.vendorId === 'irisB'), [{ reference: 'DSB-B', status: 'FAILED', amount: 40_000, at: new Date('2026-11-20T09:00:00Z') }], 'a Refund credit: the money came back, whatever the read says');
  t.match(lines.filter((l) => l.vendorId === 'irisZ'), [{ reference: null, status: 'FAILED', amount: 15_000 }], 'a Refund credit of a payout Kasir did not read');
  t.equal(lines.length, 4, 'the top-up and the fee are no payout lines');
});
