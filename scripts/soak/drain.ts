// After the chaos: nothing is killed any more and every process is up. The drain does what the
// merchant's clients would (retry every request whose outcome is still open, with the same key
// and body; ask fetch-status about payments the gateway may have lost the callback of) and
// polls the database until nothing is left in flight, or the deadline passes. It decides
// nothing: the audit, run next, judges what the drain leaves.
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import { queueNames } from '../../db/queue.ts';
import { sql, type Pool } from '../../db/pool.ts';
import type { Client } from './client.ts';
import type { operations } from './load.ts';
import type { Kill } from './supervisor.ts';
import type { OrderRecord, PayoutRecord, RefundRecord, Tally } from './tally.ts';

/**
 * How long the simulator keeps retrying a callback (5 attempts over about 23 s,
 * docs/simulator.md). A payment accepted this long before a simulator kill may have had its
 * callback cut off with the process.
 */
export const SIMULATOR_CALLBACK_SPAN_MS = 25_000;
const POLL_MS = 250;
const FETCH_STATUS_EVERY_MS = 3_000;

const backlogRow = z.object({
  creating: z.number(),
  refunds_pending: z.number(),
  payouts_open: z.number(),
  settlements_open: z.number(),
  webhooks_pending: z.number(),
  jobs_due: z.number(),
});
export type Backlog = z.infer<typeof backlogRow> & { open_requests: number; payments_not_paid: number };

/** Work still in flight, by kind. */
export async function readBacklog(pool: Pool, tally: Tally, unpaid: string[]): Promise<Backlog> {
  const row = await pool.one(sql.type(backlogRow)`
    select
      (select count(*) from orders where status = 'CREATING')::int as creating,
      (select count(*) from refunds where status = 'PENDING')::int as refunds_pending,
      (select count(*) from disbursements where status in ('PENDING', 'IN_REVIEW', 'ON_PROCESS'))::int as payouts_open,
      (select count(*) from settlements where status in ('PENDING', 'PROCESSING'))::int as settlements_open,
      (select count(*) from webhook_deliveries where status = 'PENDING')::int as webhooks_pending,
      (select count(*) from pgboss.job
        where name = any(${sql.array(queueNames, 'text')})
          and (state = 'active' or (state in ('created', 'retry') and start_after <= now())))::int as jobs_due`);
  return { ...row, open_requests: tally.open().length, payments_not_paid: unpaid.length };
}

/** Ids of orders the payer paid (the simulator said so) that Kasir does not show as paid. */
export async function unpaidPayments(pool: Pool, tally: Tally): Promise<string[]> {
  const paid = [...tally.orders.values()].filter((o) => o.payAckAt !== null).map((o) => o.ackId!);
  if (!paid.length) return [];
  return [
    ...(await pool.anyFirst(sql.type(z.object({ id: z.string() }))`
      select id from orders where id = any(${sql.array(paid, 'uuid')}) and status not in ('PAID', 'REFUNDED')`)),
  ];
}

export function isSettled(b: Backlog): boolean {
  return Object.values(b).every((n) => n === 0);
}

export interface DrainResult {
  /** ms from the drain's start until nothing was in flight; null if the deadline came first. */
  settledAfterMs: number | null;
  backlog: Backlog;
  /** Orders a fetch-status made PAID after the simulator was killed with their callback pending. */
  recoveredByFetchStatus: string[];
}

export async function drain(input: {
  pool: Pool;
  tally: Tally;
  client: Client;
  ops: ReturnType<typeof operations>;
  apiUrl: string;
  apiKey: string;
  simulatorKills: Kill[];
  deadlineMs: number;
}): Promise<DrainResult> {
  const { pool, tally, ops } = input;
  const started = Date.now();
  const deadline = started + input.deadlineMs;

  // The merchant's retries of whatever is still open, a few at a time.
  const open = tally.open();
  const retries = (async () => {
    for (let i = 0; i < open.length; i += 4) {
      await Promise.all(
        open.slice(i, i + 4).map((rec) => {
          if (tally.orders.has(rec.key)) return ops.sendOrder(rec as OrderRecord, deadline);
          if (tally.refunds.has(rec.key)) return ops.sendRefund(rec as RefundRecord, deadline);
          return ops.sendPayout(rec as PayoutRecord, deadline);
        }),
      );
    }
  })();

  const mayHaveLostCallback = (o: OrderRecord) =>
    input.simulatorKills.some((k) => o.payAckAt !== null && k.at >= o.payAckAt && k.at - o.payAckAt <= SIMULATOR_CALLBACK_SPAN_MS);
  const recovered = new Set<string>();
  let lastFetch = 0;
  let backlog: Backlog;
  for (;;) {
    const unpaid = await unpaidPayments(pool, tally);
    backlog = await readBacklog(pool, tally, unpaid);
    if (isSettled(backlog)) break;
    if (Date.now() > deadline) {
      await retries;
      return { settledAfterMs: null, backlog, recoveredByFetchStatus: [...recovered] };
    }
    if (unpaid.length && Date.now() - lastFetch > FETCH_STATUS_EVERY_MS) {
      lastFetch = Date.now();
      const lost = [...tally.orders.values()].filter((o) => unpaid.includes(o.ackId!) && mayHaveLostCallback(o));
      for (const o of lost) {
        const answer = await input.client.request('POST /v1/orders/:ref/fetch-status', `${input.apiUrl}/v1/orders/${o.ackRef}/fetch-status`, {
          method: 'POST',
          headers: { 'x-api-key': input.apiKey },
        });
        if (answer.ok && answer.json?.data?.status === 'PAID') recovered.add(o.ackRef!);
      }
    }
    await delay(POLL_MS);
  }
  await retries;
  return { settledAfterMs: Date.now() - started, backlog, recoveredByFetchStatus: [...recovered] };
}
