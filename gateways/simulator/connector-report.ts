// Kasir's reading of the simulator's daily report (docs/simulator.md, "Reports"): the lines of
// GET /v1/reports/lines between two instants, page after page by its cursor, in Kasir's terms.
// Kasir's side of the protocol, like connector.ts: written from the simulator's documentation,
// never from the simulator's code.
import { z } from 'zod';
import { ReportUnavailable, type Outcome, type ReportDay, type VendorLine, type VendorReport } from '../gateway.ts';
import type { HttpAnswer } from '../http.ts';

const PAGE = 2000;

const line = z.object({
  type: z.enum(['PAYMENT', 'PAYOUT', 'REFUND']),
  reference: z.string().min(1),
  id: z.string().min(1),
  order_reference: z.string().nullish(),
  amount: z.number().int().nonnegative(),
  status: z.string(),
  fee: z.number().int().nonnegative().nullish(),
  at: z.iso.datetime({ offset: true }),
});
const page = z.object({ data: z.array(line), next: z.string().min(1).nullable() });

// Anything the simulator adds later is not final: never mistaken for money moved.
const STATUS: Readonly<Record<string, VendorLine['status']>> = { SUCCESS: 'SUCCESS', FAILED: 'FAILED' };

export function toVendorLine(l: z.infer<typeof line>): VendorLine {
  return {
    kind: l.type,
    reference: l.reference,
    vendorId: l.id,
    orderReference: l.order_reference ?? null,
    amount: l.amount,
    status: STATUS[l.status] ?? 'PENDING',
    at: new Date(l.at),
    fee: l.fee ?? null,
  };
}

type Request = (method: 'GET' | 'POST', path: string) => Promise<Outcome<HttpAnswer>>;

/** The report of `day` through `request` (the connector's signed client). */
export async function simulatorReport(request: Request, day: ReportDay): Promise<VendorReport> {
  async function* lines(): AsyncIterable<VendorLine> {
    let after: string | null = null;
    do {
      const query = new URLSearchParams({ from: day.from.toISOString(), to: day.to.toISOString(), limit: String(PAGE), ...(after ? { after } : {}) });
      const answer = await request('GET', `/v1/reports/lines?${query}`);
      if (answer.kind !== 'ok') throw new ReportUnavailable(`report page: ${answer.reason}`);
      if (answer.value.status !== 200) throw new ReportUnavailable(`report page: HTTP ${answer.value.status}`);
      const parsed = page.safeParse(answer.value.body);
      if (!parsed.success) throw new ReportUnavailable('report page: unreadable answer');
      for (const l of parsed.data.data) yield toVendorLine(l);
      after = parsed.data.next;
    } while (after);
  }
  return { source: 'list', lines: lines() };
}
