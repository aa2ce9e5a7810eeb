// The audit after the drain: what the clients were told against what the database holds, and
// the database against its own invariants. Each check names its misses (up to a few examples,
// with the count); the soak fails on any miss.
import { createHmac } from 'node:crypto';
import { z } from 'zod';
import { auditLedger } from '../../db/ledger.ts';
import { queueNames } from '../../db/queue.ts';
import { sql, type Pool } from '../../db/pool.ts';
import { isAmbiguous, type Answer, type Client } from './client.ts';
import { describe, type LoadTarget } from './load.ts';
import type { CrashRecord } from './postgres.ts';
import type { Receiver } from './receiver.ts';
import type { OwnExit } from './supervisor.ts';
import type { Tally } from './tally.ts';

/** The target for an order left CREATING by a Postgres crash: resolved this soon after Postgres returns. */
export const CREATING_AFTER_CRASH_LIMIT_MS = 15_000;
/**
 * A job is stuck when it has been running, or due and not started, this long: a running job's
 * heartbeat (10 s) goes stale and the next supervision pass (5 s) fails it for a retry within
 * that, and an idle worker is woken by NOTIFY in milliseconds. Younger ones are merely queued
 * (a disbursement's fallback reconcile falls due whether or not its callback already finished it).
 */
const JOB_GRACE_SECONDS = 15;
const REPLAY_CONCURRENCY = 4;
const REPLAY_TRIES = 5;

export interface Check {
  name: string;
  misses: string[];
  /** Figures the check measured, for the report. */
  note?: string;
}

export interface AuditInput {
  pool: Pool;
  tally: Tally;
  client: Client;
  target: LoadTarget;
  merchantId: string;
  receiver: Receiver;
  crashes: CrashRecord[];
}

export async function audit(input: AuditInput): Promise<Check[]> {
  return [
    await acknowledgedOrdersExist(input),
    await acknowledgedRefundsExist(input),
    await acknowledgedPayoutsExist(input),
    await keysAnswerTheSame(input),
    await nothingStuck(input),
    await paymentsReachedKasir(input),
    await paidOrdersCreditedOnce(input),
    await payoutsSettledOnce(input),
    await refundsSettledOnce(input),
    await webhooksDelivered(input),
    await ledgerClean(input),
    await creatingAfterCrashes(input),
  ];
}

/** How long after Postgres returns a process that was starting during the outage may still fail its start. */
const START_AFTER_OUTAGE_MS = 5_000;

/**
 * The processes themselves: all back after the chaos, and none ended unless killed. A process
 * that was starting while Postgres was down may fail its start (it exits and the supervisor
 * starts it again): counted, not a miss. One that ended while running, or failed to start
 * while Postgres was up, is a miss.
 */
export function processChecks(notBack: string[], exits: OwnExit[], crashes: CrashRecord[]): Check[] {
  const inOutage = (e: OwnExit) => !e.wasReady && crashes.some((c) => e.at >= c.killedAt && e.at <= c.readyAt + START_AFTER_OUTAGE_MS);
  const line = (e: OwnExit) => `${e.name} (${e.how}, ${e.wasReady ? 'while running' : 'while starting'}) at ${new Date(e.at).toISOString()}: ${e.said}`.slice(0, 400);
  const outage = exits.filter(inOutage);
  return [
    { name: 'every process back up after the chaos', misses: notBack },
    {
      name: 'no process ended unless killed',
      misses: exits.filter((e) => !inOutage(e)).map(line),
      note: outage.length ? `${outage.length} starts failed while Postgres was down (${[...new Set(outage.map((e) => e.name))].join(', ')}), then succeeded` : undefined,
    },
  ];
}

const idStatus = z.object({ id: z.string(), status: z.string() });

async function statusesOf(pool: Pool, table: 'orders' | 'refunds' | 'disbursements', ids: string[]): Promise<Map<string, string>> {
  if (!ids.length) return new Map();
  const rows = await pool.any(sql.type(idStatus)`select id, status from ${sql.identifier([table])} where id = any(${sql.array(ids, 'uuid')})`);
  return new Map(rows.map((r) => [r.id, r.status]));
}

async function acknowledgedOrdersExist({ pool, tally }: AuditInput): Promise<Check> {
  const acked = [...tally.orders.values()].filter((o) => o.ackId);
  const found = await statusesOf(pool, 'orders', acked.map((o) => o.ackId!));
  const misses = acked.flatMap((o) => {
    const status = found.get(o.ackId!);
    if (!status) return [`${o.key}: answered ${o.ackRef} (${o.ackId}), which does not exist`];
    if (status === 'CREATING' || status === 'FAILED') return [`${o.key}: answered ${o.ackRef} as created, now ${status}`];
    return [];
  });
  return { name: 'every acknowledged order exists', misses, note: `${acked.length} acknowledged` };
}

async function acknowledgedRefundsExist({ pool, tally }: AuditInput): Promise<Check> {
  const acked = [...tally.refunds.values()].filter((r) => r.ackId);
  const found = await statusesOf(pool, 'refunds', acked.map((r) => r.ackId!));
  const misses = acked.filter((r) => !found.has(r.ackId!)).map((r) => `${r.key}: answered refund ${r.ackId}, which does not exist`);
  return { name: 'every acknowledged refund exists', misses, note: `${acked.length} acknowledged` };
}

async function acknowledgedPayoutsExist({ pool, tally, merchantId }: AuditInput): Promise<Check> {
  const byId = new Map<string, string>(); // id -> key
  for (const p of tally.payouts.values()) if (p.ackId) byId.set(p.ackId, p.key);
  for (const [key, id] of tally.imports?.ackIds ?? []) byId.set(id, key);
  const found = await statusesOf(pool, 'disbursements', [...byId.keys()]);
  const misses = [...byId].filter(([id]) => !found.has(id)).map(([id, key]) => `${key}: answered disbursement ${id}, which does not exist`);
  // Acknowledged only by a 409 after a lost answer: the key must hold exactly one.
  const byKey = [...tally.payouts.values()].filter((p) => p.existsByKey && !p.ackId).map((p) => p.key);
  if (byKey.length) {
    const held = new Set(
      await pool.anyFirst(sql.type(z.object({ idempotency_key: z.string() }))`
        select idempotency_key from disbursements where merchant_id = ${merchantId} and idempotency_key = any(${sql.array(byKey, 'text')})`),
    );
    for (const key of byKey) if (!held.has(key)) misses.push(`${key}: answered 409 DUPLICATE_IDEMPOTENCY_KEY, but no disbursement holds the key`);
  }
  // Those the simulator fails (accounts ending 0000) must not have succeeded.
  const failing = [...tally.payouts.values()].filter((p) => p.expectFailure && p.ackId && found.get(p.ackId) === 'SUCCESS');
  for (const p of failing) misses.push(`${p.key}: SUCCESS to an account the gateway closed`);
  return { name: 'every acknowledged disbursement exists', misses, note: `${byId.size + byKey.length} acknowledged (${tally.imports?.ackIds.size ?? 0} by the CSV import)` };
}

/** Sends `send` until it gets an answer that is not ambiguous, a few times. */
async function definite(send: () => Promise<Answer>): Promise<Answer> {
  let answer = await send();
  for (let i = 1; i < REPLAY_TRIES && isAmbiguous(answer); i++) answer = await send();
  return answer;
}

async function inBatches<T>(items: T[], each: (item: T) => Promise<void>) {
  for (let i = 0; i < items.length; i += REPLAY_CONCURRENCY) await Promise.all(items.slice(i, i + REPLAY_CONCURRENCY).map(each));
}

/**
 * Every key the load used, sent once more with its body now that the stack is quiet: an order
 * or refund key answers the resource it first answered, a disbursement key 409. Mismatches seen
 * during the load itself are included.
 */
async function keysAnswerTheSame({ tally, client, target }: AuditInput): Promise<Check> {
  const misses = tally.mismatches.map((m) => `${m.key}: first answered ${m.first}, later ${m.then}`);
  const headers = { 'x-api-key': target.apiKey, 'content-type': 'application/json' };
  const orders = [...tally.orders.values()].filter((o) => o.ackId);
  await inBatches(orders, async (o) => {
    const answer = await definite(() =>
      client.request('replay POST /v1/orders', `${target.apiUrl}/v1/orders`, {
        method: 'POST',
        headers: { ...headers, 'idempotency-key': o.key, 'x-signature': `sha256=${createHmac('sha256', target.webhookSecret).update(o.raw).digest('hex')}` },
        body: o.raw,
      }),
    );
    const id = answer.ok ? answer.json?.data?.id : undefined;
    if (id !== o.ackId) misses.push(`${o.key}: first answered ${o.ackId}, the replay ${id ?? describe(answer)}`);
  });
  const refunds = [...tally.refunds.values()].filter((r) => r.ackId);
  await inBatches(refunds, async (r) => {
    const answer = await definite(() =>
      client.request('replay POST /v1/orders/:ref/refund', `${target.apiUrl}/v1/orders/${r.orderRef}/refund`, { method: 'POST', headers: { ...headers, 'idempotency-key': r.key }, body: r.raw }),
    );
    const id = answer.ok ? answer.json?.data?.id : undefined;
    if (id !== r.ackId) misses.push(`${r.key}: first answered ${r.ackId}, the replay ${id ?? describe(answer)}`);
  });
  const payouts = [...tally.payouts.values()].filter((p) => p.ackId || p.existsByKey);
  await inBatches(payouts, async (p) => {
    const answer = await definite(() => client.request('replay POST /v1/disbursements', `${target.apiUrl}/v1/disbursements`, { method: 'POST', headers, body: p.raw }));
    if (!answer.ok || answer.json?.error?.code !== 'DUPLICATE_IDEMPOTENCY_KEY') misses.push(`${p.key}: the replay answered ${describe(answer)}, not 409 DUPLICATE_IDEMPOTENCY_KEY`);
  });
  const retried = [...tally.orders.values(), ...tally.refunds.values(), ...tally.payouts.values()].filter((r) => r.sends > 1).length;
  const imported = tally.imports ? (tally.imports.replayed ? `; the CSV import's ${tally.imports.ackIds.size} rows replayed` : '; the CSV import was never answered twice') : '';
  if (tally.imports && !tally.imports.replayed) misses.push(`import ${tally.imports.prefix}: not answered twice, so its replay was not checked`);
  return { name: 'every idempotency key answers the same resource', misses, note: `${retried} keys sent more than once during the load; ${orders.length + refunds.length + payouts.length} replayed after the drain${imported}` };
}

const stuckRow = z.object({ what: z.string(), since: z.string() });

async function nothingStuck({ pool }: AuditInput): Promise<Check> {
  const rows = await pool.any(sql.type(stuckRow)`
    select 'order ' || ref_code || ' CREATING' as what, created_at::text as since from orders where status = 'CREATING'
    union all
    select 'refund ' || id || ' PENDING', created_at::text from refunds where status = 'PENDING'
    union all
    select 'disbursement ' || ref_code || ' ' || status, updated_at::text from disbursements where status in ('PENDING', 'IN_REVIEW', 'ON_PROCESS')
    union all
    select 'settlement ' || id || ' ' || status, updated_at::text from settlements where status in ('PENDING', 'PROCESSING')
    union all
    select 'webhook ' || id || ' ' || event || ' PENDING (' || attempts || ' attempts)', created_at::text from webhook_deliveries where status = 'PENDING'
    union all
    select 'job ' || name || ' ' || id || ' ' || state || ' (retry ' || retry_count || ')', coalesce(started_on, start_after)::text
    from pgboss.job
    where name = any(${sql.array(queueNames, 'text')})
      and ((state = 'active' and started_on < now() - make_interval(secs => ${JOB_GRACE_SECONDS}))
        or (state in ('created', 'retry') and start_after < now() - make_interval(secs => ${JOB_GRACE_SECONDS})))
    order by since`);
  return { name: 'nothing stuck in an internal state', misses: rows.map((r) => `${r.what} since ${r.since}`) };
}

async function paymentsReachedKasir({ pool, tally }: AuditInput): Promise<Check> {
  const paid = [...tally.orders.values()].filter((o) => o.payAckAt !== null);
  const found = await statusesOf(pool, 'orders', paid.map((o) => o.ackId!));
  const misses = paid.filter((o) => !['PAID', 'REFUNDED'].includes(found.get(o.ackId!) ?? '')).map((o) => `${o.ackRef}: paid at the gateway, ${found.get(o.ackId!) ?? 'missing'} in Kasir`);
  const lost = [...tally.orders.values()].filter((o) => o.payMissed).length;
  return { name: 'every payment the gateway accepted made its order PAID', misses, note: `${paid.length} payments accepted${lost ? `; ${lost} not made (the gateway no longer had the QR, or was down for the whole retry window)` : ''}` };
}

const creditRow = z.object({ ref_code: z.string(), status: z.string(), payments: z.number(), clearing: z.number().nullable(), amount: z.number() });

async function paidOrdersCreditedOnce({ pool }: AuditInput): Promise<Check> {
  const rows = await pool.any(sql.type(creditRow)`
    select o.ref_code, o.status, o.amount, count(distinct t.id)::int as payments,
           sum(p.amount) filter (where a.kind = 'VENDOR_CLEARING')::bigint as clearing
    from orders o
    left join ledger_transfers t on t.kind = 'ORDER_PAYMENT' and t.reference_id = o.id
    left join ledger_postings p on p.transfer_id = t.id
    left join ledger_accounts a on a.id = p.account_id
    group by o.id`);
  const misses = rows.flatMap((r) => {
    const paid = r.status === 'PAID' || r.status === 'REFUNDED';
    if (paid && r.payments !== 1) return [`${r.ref_code} ${r.status}: ${r.payments} payment transfers`];
    if (!paid && r.payments !== 0) return [`${r.ref_code} ${r.status}: credited ${r.payments} times though not paid`];
    if (paid && r.clearing !== -r.amount) return [`${r.ref_code}: payment of ${r.amount} took ${r.clearing} from vendor clearing`];
    return [];
  });
  const paidCount = rows.filter((r) => r.status === 'PAID' || r.status === 'REFUNDED').length;
  return { name: 'every PAID order credited exactly once', misses, note: `${paidCount} paid of ${rows.length} orders` };
}

const transferCounts = z.object({ ref: z.string(), status: z.string(), opened: z.number(), completed: z.number(), reversed: z.number() });

function settledOnce(kind: string, rows: readonly z.infer<typeof transferCounts>[], success: string, failure: string[]): string[] {
  return rows.flatMap((r) => {
    const expected = r.status === success ? [1, 1, 0] : failure.includes(r.status) ? [1, 0, 1] : [1, 0, 0];
    const got = [r.opened, r.completed, r.reversed];
    return got.every((n, i) => n === expected[i]) ? [] : [`${kind} ${r.ref} ${r.status}: debit/completed/reversal transfers ${got.join('/')}, expected ${expected.join('/')}`];
  });
}

const importDebit = z.object({ id: z.string(), debited: z.number().nullable(), rows_debit: z.number().nullable() });

/**
 * A disbursement's debit is its own DISBURSEMENT transfer, or, for a CSV row, the one
 * DISBURSEMENT_IMPORT transfer of its import (migration 023), which must take exactly the
 * import's rows' total_debit from the wallet. Completion and reversal are per disbursement.
 */
async function payoutsSettledOnce({ pool }: AuditInput): Promise<Check> {
  const rows = await pool.any(sql.type(transferCounts)`
    select d.ref_code as ref, d.status,
           (count(t.id) filter (where t.kind = 'DISBURSEMENT')
            + (select count(*) from ledger_transfers i where i.kind = 'DISBURSEMENT_IMPORT' and i.reference_id = d.import_id))::int as opened,
           count(t.id) filter (where t.kind = 'DISBURSEMENT_COMPLETED')::int as completed,
           count(t.id) filter (where t.kind = 'DISBURSEMENT_REVERSAL')::int as reversed
    from disbursements d left join ledger_transfers t on t.reference_id = d.id
    group by d.id`);
  const imports = await pool.any(sql.type(importDebit)`
    select i.id,
           (select -sum(p.amount) from ledger_transfers t
              join ledger_postings p on p.transfer_id = t.id
              join ledger_accounts a on a.id = p.account_id and a.kind = 'WALLET'
            where t.kind = 'DISBURSEMENT_IMPORT' and t.reference_id = i.id)::bigint as debited,
           (select sum(d.total_debit) from disbursements d where d.import_id = i.id)::bigint as rows_debit
    from disbursement_imports i`);
  const wrongImports = imports
    .filter((i) => i.debited !== null && i.debited !== i.rows_debit)
    .map((i) => `import ${i.id}: its transfer took ${i.debited} from the wallet, its rows' total_debit is ${i.rows_debit ?? 0}`);
  const count = (s: string) => rows.filter((r) => r.status === s).length;
  return {
    name: 'every disbursement debited once, then completed or reversed once',
    misses: [...settledOnce('disbursement', rows, 'SUCCESS', ['FAILED', 'REJECTED']), ...wrongImports],
    note: `${rows.length} disbursements: ${count('SUCCESS')} SUCCESS, ${count('FAILED')} FAILED (reversed)`,
  };
}

async function refundsSettledOnce({ pool }: AuditInput): Promise<Check> {
  const rows = await pool.any(sql.type(transferCounts)`
    select r.id::text as ref, r.status,
           count(t.id) filter (where t.kind = 'REFUND')::int as opened,
           count(t.id) filter (where t.kind = 'REFUND_COMPLETED')::int as completed,
           count(t.id) filter (where t.kind = 'REFUND_REVERSAL')::int as reversed
    from refunds r left join ledger_transfers t on t.reference_id = r.id
    group by r.id`);
  const count = (s: string) => rows.filter((r) => r.status === s).length;
  return {
    name: 'every refund held once, then completed or reversed once',
    misses: settledOnce('refund', rows, 'SUCCEEDED', ['FAILED']),
    note: `${rows.length} refunds: ${count('SUCCEEDED')} SUCCEEDED, ${count('FAILED')} FAILED (reversed)`,
  };
}

const deliveryRow = z.object({ id: z.string(), event: z.string(), status: z.string(), attempts: z.number() });

async function webhooksDelivered({ pool, receiver }: AuditInput): Promise<Check> {
  const rows = await pool.any(sql.type(deliveryRow)`select id, event, status, attempts from webhook_deliveries`);
  const known = new Set(rows.map((r) => r.id));
  const misses = [
    ...rows.filter((r) => r.status !== 'DELIVERED' || !receiver.received.has(r.id)).map((r) => `${r.event} ${r.id}: ${r.status} after ${r.attempts} attempts, received ${receiver.received.get(r.id) ?? 0} times`),
    ...[...receiver.received.keys()].filter((id) => !known.has(id)).map((id) => `received ${id}, which Kasir has no record of`),
    ...receiver.badSignatures.map((id) => `${id}: X-Signature does not match the body`),
    ...(receiver.anonymous ? [`${receiver.anonymous} requests without a webhook-id`] : []),
  ];
  const copies = [...receiver.received.values()].reduce((a, b) => a + b, 0);
  return { name: 'every due webhook delivered to the receiver', misses, note: `${rows.length} deliveries, ${copies} received (${copies - receiver.received.size} repeats)` };
}

async function ledgerClean({ pool }: AuditInput): Promise<Check> {
  const report = await auditLedger(pool);
  return {
    name: 'ledger audit clean (ops ledger:audit)',
    misses: report.problems.map((p) => `${p.check} ${p.subject}: ${p.detail}`),
    note: `${report.accounts} accounts, ${report.transfers} transfers, ${report.postings} postings`,
  };
}

const creatingRow = z.object({ ref_code: z.string(), created_at: z.number(), left_at: z.number().nullable() });

/**
 * For each Postgres crash, the orders that were CREATING when it happened, and how long after
 * Postgres accepted connections again each left CREATING.
 */
async function creatingAfterCrashes({ pool, crashes }: AuditInput): Promise<Check> {
  const rows = await pool.any(sql.type(creatingRow)`
    select o.ref_code, extract(epoch from o.created_at)::float8 * 1000 as created_at,
           extract(epoch from (select min(e.created_at) from order_events e where e.order_id = o.id and e.status in ('PENDING', 'FAILED')))::float8 * 1000 as left_at
    from orders o`);
  const misses: string[] = [];
  const figures: string[] = [];
  for (const [i, crash] of crashes.entries()) {
    const caught = rows.filter((r) => r.created_at < crash.killedAt && (r.left_at === null || r.left_at > crash.killedAt));
    const lags = caught.map((r) => ({ ref: r.ref_code, lag: r.left_at === null ? Infinity : r.left_at - crash.readyAt }));
    const worst = lags.reduce((a, b) => Math.max(a, b.lag), -Infinity);
    const last = worst === Infinity ? 'one never left' : `the last left ${(Math.max(0, worst) / 1000).toFixed(1)} s after Postgres returned`;
    figures.push(`crash ${i + 1}: ${caught.length} orders CREATING${caught.length ? `, ${last}` : ''}`);
    for (const l of lags.filter((l) => l.lag > CREATING_AFTER_CRASH_LIMIT_MS)) {
      misses.push(`crash ${i + 1}: ${l.ref} left CREATING ${l.lag === Infinity ? 'never' : `${(l.lag / 1000).toFixed(1)} s`} after Postgres returned (limit ${CREATING_AFTER_CRASH_LIMIT_MS / 1000} s)`);
    }
  }
  const longest = rows.reduce((a, r) => Math.max(a, (r.left_at ?? Date.now()) - r.created_at), 0);
  figures.push(`longest CREATING of any order ${(longest / 1000).toFixed(1)} s`);
  return { name: `orders caught CREATING by a Postgres crash resolved ≤${CREATING_AFTER_CRASH_LIMIT_MS / 1000} s after it returns`, misses, note: figures.join('; ') };
}
