// A synthetic year of a Kasir installation, written straight into its own schema, row for row
// shaped like what the API and the workers write (db/orders.ts, db/refunds.ts,
// db/disbursements.ts, db/ledger.ts, the webhook worker, the callback routes): for the history
// bench (scripts/bench/history.ts) and its test.
//
// Set-based: each merchant's orders are made in chunks of CHUNK, a temporary table per chunk
// (h_orders) from generate_series, and every table group is filled from it by one statement:
// orders and their events, vendor callbacks, refunds, payouts (with events, vendor references
// and callbacks), webhook deliveries and attempts, then the ledger. One function per table
// group, so a schema change touches one place.
//
// The ledger is what db/ledger.ts would have written, posting by posting: every money movement
// of a chunk is staged as transfers and legs, the postings are chained per account in time
// order on top of the account's cached balance (carried from the previous chunk), and the
// cached balance and version move by the chunk's sum and count. Chunks go in time order, so
// `seq` orders each account's postings as db/ledger.ts does. The audit (auditLedger) must be
// clean afterwards; the bench checks it.
//
// Shape of a merchant's year (order n of N created at start + (n − ½)·365 d / N):
//   n mod 100: 0-7 EXPIRED, 8 FAILED, 9 REFUNDED (refunded in full), 10-11 PAID and half
//   refunded, the rest PAID; orders of the last 15 minutes not expired or failed are PENDING
//   (each merchant's last order is made a minute before the end, so every merchant has one).
//   Every 50th order's time a payout (BANK, fee 2,500), one in 20 of them FAILED (reversed).
//   Webhooks: order.paid, order.expired, refund.succeeded, disbursement.success/failed, each
//   DELIVERED, one in 50 after a first attempt answered 503.
import type pg from 'pg';
import { backfillPaymentTotals, openLedgerAccounts } from '../lib/bench-ledger.ts';

/** Orders per chunk: a few seconds per statement, well inside any statement timeout. */
export const CHUNK = 50_000;
/** Orders of the installation per payout. */
const ORDERS_PER_PAYOUT = 50;
const DAY_MS = 86_400_000;

export interface LoadMerchant {
  id: string;
  orders: number;
}

export interface LoadContext {
  client: pg.Client;
  vendorCode: string;
  /** The bank the payouts go to (banks.id, short code, name). */
  bank: { id: string; short_code: string; name: string };
  /** The end of the year (the last order's time, about now). */
  end: Date;
}

/** Loads each merchant's year in chunks, then the per-day totals; returns the rows written per table group. */
export async function loadYear(ctx: LoadContext, merchants: LoadMerchant[], progress: (line: string) => void = () => undefined) {
  const start = new Date(ctx.end.getTime() - 365 * DAY_MS);
  await ctx.client.query('drop table if exists h_vendor');
  await ctx.client.query(`create temporary table h_vendor as select $1::text as code`, [ctx.vendorCode]);
  for (const m of merchants) {
    await openLedgerAccounts(ctx.client, m.id);
    for (let from = 1; from <= m.orders; from += CHUNK) {
      const to = Math.min(from + CHUNK - 1, m.orders);
      const started = performance.now();
      await stageOrders(ctx, m, from, to, start);
      await insertOrders(ctx.client);
      await insertOrderEvents(ctx.client);
      await insertPaymentCallbacks(ctx);
      await insertRefunds(ctx);
      await insertPayouts(ctx, m, from, to, start);
      await insertWebhooks(ctx.client);
      await postLedger(ctx.client, m.id);
      progress(`merchant ${m.id.slice(0, 8)}: orders ${from}-${to} of ${m.orders} in ${Math.round(performance.now() - started)} ms`);
    }
  }
  await backfillDailyTotals(ctx.client);
  await backfillPaymentTotals(ctx.client);
}

/**
 * The state autovacuum keeps a live database in: statistics, visibility map and hint bits set.
 * (Without the vacuum, the first reads and writes after the load set hint bits and write WAL
 * that a year-old installation would not.)
 */
export async function analyze(client: pg.Client): Promise<void> {
  await client.query('vacuum (analyze)');
}

/** h_orders: the chunk's orders with everything later groups derive from them (MDR, refund amount, times). */
async function stageOrders(ctx: LoadContext, m: LoadMerchant, from: number, to: number, start: Date) {
  await ctx.client.query('drop table if exists h_orders');
  await ctx.client.query(
    `create temporary table h_orders as
     select id, n, ref_code, amount, created_at, api,
            case when status in ('PAID', 'REFUNDED') and created_at > $6::timestamptz - interval '15 minutes' then 'PENDING' else status end as status,
            case when status in ('PAID', 'REFUNDED') and created_at <= $6::timestamptz - interval '15 minutes' then created_at + interval '40 seconds' end as paid_at,
            case when created_at > $6::timestamptz - interval '15 minutes' then 0 when status = 'REFUNDED' then amount when n % 100 in (10, 11) then amount / 2 else 0 end as refund_amount,
            (amount * 70 + 5000) / 10000 as mdr, $2::uuid as merchant_id
     from (
       select gen_random_uuid() as id, n,
              'ORD-' || to_char(t at time zone 'Asia/Jakarta', 'YYYYMMDDHH24MISS') || '-' || upper(substr(md5($2::text || n), 1, 10)) as ref_code,
              10000 + (n::bigint * 7919) % 990000 as amount, t as created_at,
              case when n % 5 = 0 then 'LEGACY' else 'V1' end as api,
              case when n = $5 then 'PAID' when n % 100 < 8 then 'EXPIRED' when n % 100 = 8 then 'FAILED' when n % 100 = 9 then 'REFUNDED' else 'PAID' end as status
       from generate_series($3::int, $4::int) n,
            -- The merchant's last order a minute before the end: every merchant has one PENDING.
            lateral (select case when n = $5 then $6::timestamptz - interval '1 minute'
                                 else $1::timestamptz + make_interval(secs => (n - 0.5) * 31536000.0 / $5::int) end) c(t)
     ) o`,
    [start.toISOString(), m.id, from, to, m.orders, ctx.end.toISOString()],
  );
}

/** Orders as db/orders.ts leaves them once the vendor answered (and the payer paid, or not). */
async function insertOrders(client: pg.Client) {
  await client.query(
    `insert into orders (id, merchant_id, ref_code, merchant_order_id, api, amount, status, customer_name, customer_email,
                         customer_phone, metadata, expires_at, qris_string, qr_token, vendor_code, vendor_order_id, vendor_rrn,
                         vendors_tried, failure_code, paid_at, mdr_amount, created_at, updated_at)
     select o.id, o.merchant_id, o.ref_code, 'INV-' || o.n, o.api, o.amount, o.status, 'Pelanggan ' || o.n,
            'pelanggan' || o.n || '@example.com', '628' || lpad((o.n % 1000000000)::text, 10, '0'),
            case when o.n % 3 = 0 then jsonb_build_object('cart', 'C-' || o.n, 'channel', 'pos') end,
            o.created_at + interval '30 minutes',
            case when o.status <> 'FAILED' then '00020101021226610016ID.CO.KASIR.WWW01189360091800' || lpad(o.n::text, 12, '0') ||
                 '0215ID10' || lpad(o.n::text, 11, '0') || '0303UMI51440014ID.CO.QRIS.WWW0215ID2026' || '5204581253033605405' ||
                 o.amount || '5802ID5909Toko Sabar6007Jakarta61051234062070703A0163046A1B' end,
            md5('qr' || o.id::text), case when o.status <> 'FAILED' then (select code from h_vendor) end,
            case when o.status <> 'FAILED' then 'sim-' || replace(o.id::text, '-', '') end,
            case when o.paid_at is not null then 'RRN' || lpad(o.n::text, 12, '0') end,
            array[(select code from h_vendor)], case when o.status = 'FAILED' then 'VENDOR_UNAVAILABLE' end,
            o.paid_at, case when o.paid_at is not null then o.mdr end, o.created_at,
            coalesce(o.paid_at, case when o.status = 'EXPIRED' then o.created_at + interval '30 minutes' else o.created_at end)
     from h_orders o`,
  );
}

/** The status timeline: order.created for every listed order, then its paid, expired or failed step. */
async function insertOrderEvents(client: pg.Client) {
  await client.query(
    `insert into order_events (order_id, status, event, source, detail, created_at)
     select id, status, event, source, detail, at from (
       select o.id, 'PENDING' as status, 'order.created' as event, 'api' as source, null::jsonb as detail, o.created_at as at, 1 as step
       from h_orders o where o.status <> 'FAILED'
       union all
       select o.id, 'PAID', 'order.paid', 'callback', null, o.paid_at, 2 from h_orders o where o.paid_at is not null
       union all
       select o.id, 'EXPIRED', 'order.expired', 'scheduler', null, o.created_at + interval '30 minutes', 2 from h_orders o where o.status = 'EXPIRED'
       union all
       select o.id, 'FAILED', 'order.failed', 'vendor-worker', jsonb_build_object('reason', 'VENDOR_UNAVAILABLE'), o.created_at, 2
       from h_orders o where o.status = 'FAILED'
     ) e order by at, step`,
  );
}

/** The vendor's payment callback of every paid order, as the callback route records it. */
async function insertPaymentCallbacks(ctx: LoadContext) {
  await ctx.client.query(
    `insert into vendor_callbacks (vendor_code, event_id, type, reference, payload, received_at)
     select (select code from h_vendor), 'evt-pay-' || o.id, 'payment', 'sim-' || replace(o.id::text, '-', ''),
            jsonb_build_object('event', 'payment.succeeded', 'reference', o.ref_code, 'vendor_reference', 'sim-' || replace(o.id::text, '-', ''),
                               'amount', o.amount, 'rrn', 'RRN' || lpad(o.n::text, 12, '0'), 'paid_at', o.paid_at, 'issuer', 'GOPAY'),
            o.paid_at
     from h_orders o where o.paid_at is not null`,
  );
}

/** h_refunds and refunds: one SUCCEEDED refund per refunded order, two days after payment. */
async function insertRefunds(ctx: LoadContext) {
  await ctx.client.query('drop table if exists h_refunds');
  await ctx.client.query(
    `create temporary table h_refunds as
     select gen_random_uuid() as id, o.id as order_id, o.merchant_id, o.ref_code as order_ref, o.refund_amount as amount,
            'RFD-' || to_char((o.paid_at + interval '2 days') at time zone 'Asia/Jakarta', 'YYYYMMDDHH24MISS') || '-' || upper(substr(md5('r' || o.id::text), 1, 10)) as ref_code,
            o.paid_at + interval '2 days' as created_at, o.paid_at + interval '2 days 10 minutes' as completed_at
     from h_orders o where o.refund_amount > 0`,
  );
  await ctx.client.query(
    `insert into refunds (id, merchant_id, order_id, ref_code, amount, reason, status, vendor_code, vendor_refund_id, completed_at, created_at, updated_at)
     select id, merchant_id, order_id, ref_code, amount, 'Barang dikembalikan', 'SUCCEEDED', (select code from h_vendor),
            'sim-rfd-' || replace(id::text, '-', ''), completed_at, created_at, completed_at
     from h_refunds`,
  );
}

/**
 * h_payouts and disbursements: the chunk's payouts (one per ORDERS_PER_PAYOUT orders' time),
 * with their events, the reference recorded for the vendor, and the vendor's final callback.
 */
async function insertPayouts(ctx: LoadContext, m: LoadMerchant, from: number, to: number, start: Date) {
  const first = Math.ceil(from / ORDERS_PER_PAYOUT);
  const last = Math.floor(to / ORDERS_PER_PAYOUT);
  await ctx.client.query('drop table if exists h_payouts');
  await ctx.client.query(
    `create temporary table h_payouts as
     select gen_random_uuid() as id, $2::uuid as merchant_id, k, t as created_at, t + interval '1 minute' as completed_at,
            'DSB-' || to_char(t at time zone 'Asia/Jakarta', 'YYYYMMDDHH24MISS') || '-' || upper(substr(md5('d' || $2::text || k), 1, 10)) as ref_code,
            100000 + (k::bigint * 7919) % 4900000 as request_amount, 2500 as fee,
            case when k % 20 = 0 then 'FAILED' else 'SUCCESS' end as status
     from generate_series($3::int, $4::int) k,
          lateral (select $1::timestamptz + make_interval(secs => (k * ${ORDERS_PER_PAYOUT} + 0.25) * 31536000.0 / $5::int)) c(t)
     where t < $6::timestamptz - interval '15 minutes'`,
    [start.toISOString(), m.id, first, Math.max(first - 1, last), m.orders, ctx.end.toISOString()],
  );
  await ctx.client.query(
    `insert into disbursements (id, merchant_id, ref_code, idempotency_key, api, source, channel, bank_id, bank_short_code, bank_name,
                                account_number, account_name, request_amount, fee, total_debit, status, wib_date, vendor_code,
                                vendor_disbursement_id, vendors_tried, failure_reason, requested_at, completed_at, created_at, updated_at)
     select id, merchant_id, ref_code, 'payout-' || k, 'V1', 'API', 'BANK', $1, $2, $3, lpad((k % 100000000)::text, 10, '1'),
            'PT Pemasok ' || (k % 500), request_amount, fee, request_amount + fee, status, (created_at at time zone 'Asia/Jakarta')::date,
            (select code from h_vendor), 'sim-dsb-' || replace(id::text, '-', ''), array[(select code from h_vendor)],
            case when status = 'FAILED' then 'INVALID_ACCOUNT' end, created_at, completed_at, created_at, completed_at
     from h_payouts`,
    [ctx.bank.id, ctx.bank.short_code, ctx.bank.name],
  );
  await ctx.client.query(
    `insert into disbursement_events (disbursement_id, status, event, source, detail, created_at)
     select id, s, e, src, null, at from (
       select id, 'PENDING' as s, 'disbursement.created' as e, 'api' as src, created_at as at, 1 as step from h_payouts
       union all select id, 'ON_PROCESS', 'disbursement.on_process', 'disbursement-worker', created_at + interval '2 seconds', 2 from h_payouts
       union all select id, status, 'disbursement.' || lower(status), 'callback', completed_at, 3 from h_payouts
     ) e order by at, step`,
  );
  await ctx.client.query(
    `insert into payout_references (reference, kind, payout_id, vendors, created_at)
     select ref_code, 'DISBURSEMENT', id, array[(select code from h_vendor)], created_at + interval '2 seconds' from h_payouts`,
  );
  await ctx.client.query(
    `insert into vendor_callbacks (vendor_code, event_id, type, reference, payload, received_at)
     select (select code from h_vendor), 'evt-dsb-' || id, 'payout', ref_code,
            jsonb_build_object('event', 'payout.' || lower(status), 'reference', ref_code, 'amount', request_amount,
                               'status', status, 'failure_code', case when status = 'FAILED' then 'INVALID_ACCOUNT' end),
            completed_at
     from h_payouts`,
  );
}

/** The merchant's webhooks of the chunk (the bodies db/present builds), delivered, with their attempts. */
async function insertWebhooks(client: pg.Client) {
  await client.query('drop table if exists h_webhooks');
  await client.query(
    `create temporary table h_webhooks as
     select gen_random_uuid() as id, merchant_id, order_id, disbursement_id, event, body, at,
            row_number() over () % 50 = 0 as retried
     from (
       select o.merchant_id, o.id as order_id, null::uuid as disbursement_id, 'order.paid' as event, o.paid_at as at,
              case when o.api = 'LEGACY'
                   then json_build_object('refCode', o.ref_code, 'orderId', 'INV-' || o.n, 'totalAmount', o.amount, 'status', 'PAID',
                                          'paidAt', to_char(o.paid_at at time zone 'Asia/Jakarta', 'YYYY-MM-DD HH24:MI:SS'))
                   else json_build_object('ref_code', o.ref_code, 'merchant_order_id', 'INV-' || o.n, 'amount', o.amount, 'status', 'PAID',
                                          'event', 'order.paid', 'paid_at', o.paid_at) end::text as body
       from h_orders o where o.paid_at is not null
       union all
       select o.merchant_id, o.id, null, 'order.expired', o.created_at + interval '30 minutes',
              json_build_object('ref_code', o.ref_code, 'merchant_order_id', 'INV-' || o.n, 'amount', o.amount, 'status', 'EXPIRED',
                                'event', 'order.expired', 'paid_at', null)::text
       from h_orders o where o.status = 'EXPIRED'
       union all
       select r.merchant_id, r.order_id, null, 'refund.succeeded', r.completed_at,
              json_build_object('event', 'refund.succeeded', 'refund_id', r.id, 'ref_code', r.ref_code, 'order_ref_code', r.order_ref,
                                'amount', r.amount, 'status', 'SUCCEEDED', 'completed_at', r.completed_at)::text
       from h_refunds r
       union all
       select p.merchant_id, null, p.id, 'disbursement.' || lower(p.status), p.completed_at,
              json_build_object('event', 'disbursement.' || lower(p.status), 'id', p.id, 'ref_code', p.ref_code, 'amount', p.request_amount,
                                'fee', p.fee, 'status', p.status, 'completed_at', p.completed_at)::text
       from h_payouts p
     ) w`,
  );
  await client.query(
    `insert into webhook_deliveries (id, merchant_id, order_id, disbursement_id, event, url, body, status, attempts, last_status_code,
                                     delivered_at, created_at, updated_at)
     select id, merchant_id, order_id, disbursement_id, event, 'https://toko.example/kasir/webhook', body, 'DELIVERED',
            case when retried then 2 else 1 end, 200, at + case when retried then interval '30 seconds' else interval '300 ms' end,
            at, at + case when retried then interval '30 seconds' else interval '300 ms' end
     from h_webhooks order by at`,
  );
  await client.query(
    `insert into webhook_attempts (delivery_id, attempt, status_code, latency_ms, error, created_at)
     select id, a, case when retried and a = 1 then 503 else 200 end, 80 + (a * 37) % 200,
            case when retried and a = 1 then 'HTTP 503' end, at + case when a = 2 then interval '30 seconds' else interval '250 ms' end
     from h_webhooks, generate_series(1, case when retried then 2 else 1 end) a
     order by at, a`,
  );
}

/**
 * The chunk's money, as db/ledger.ts posts it: payments (VENDOR_CLEARING −amount, WALLET
 * +amount − MDR, FEE_REVENUE +MDR), refunds and their completion, payouts and their completion
 * or reversal. Postings chain per account from its cached balance, in time order.
 */
async function postLedger(client: pg.Client, merchantId: string) {
  await client.query('drop table if exists h_transfers');
  await client.query(
    `create temporary table h_transfers as
     select gen_random_uuid() as id, kind, reference_type, reference_id, ref_code, description, at, legs
     from (
       select 'ORDER_PAYMENT' as kind, 'ORDER' as reference_type, o.id as reference_id, o.ref_code,
              'QRIS payment ' || o.ref_code || ' (MDR ' || o.mdr || ')' as description, o.paid_at as at,
              array[['VENDOR_CLEARING', (-o.amount)::text], ['WALLET', (o.amount - o.mdr)::text], ['FEE_REVENUE', o.mdr::text]] as legs
       from h_orders o where o.paid_at is not null
       union all
       select 'REFUND', 'REFUND', r.id, r.ref_code, 'Refund of ' || r.order_ref, r.created_at,
              array[['WALLET', (-r.amount)::text], ['REFUNDS_IN_FLIGHT', r.amount::text]]
       from h_refunds r
       union all
       select 'REFUND_COMPLETED', 'REFUND', r.id, r.ref_code, 'Refund completed', r.completed_at,
              array[['REFUNDS_IN_FLIGHT', (-r.amount)::text], ['VENDOR_CLEARING', r.amount::text]]
       from h_refunds r
       union all
       select 'DISBURSEMENT', 'DISBURSEMENT', p.id, p.ref_code, 'Disbursement ' || p.ref_code, p.created_at,
              array[['WALLET', (-(p.request_amount + p.fee))::text], ['DISBURSEMENTS_IN_FLIGHT', (p.request_amount + p.fee)::text]]
       from h_payouts p
       union all
       select case p.status when 'SUCCESS' then 'DISBURSEMENT_COMPLETED' else 'DISBURSEMENT_REVERSAL' end, 'DISBURSEMENT', p.id, p.ref_code,
              case p.status when 'SUCCESS' then 'Disbursement completed' else 'Disbursement failed: INVALID_ACCOUNT' end, p.completed_at,
              case p.status when 'SUCCESS'
                   then array[['DISBURSEMENTS_IN_FLIGHT', (-(p.request_amount + p.fee))::text], ['VENDOR_CLEARING', p.request_amount::text], ['FEE_REVENUE', p.fee::text]]
                   else array[['DISBURSEMENTS_IN_FLIGHT', (-(p.request_amount + p.fee))::text], ['WALLET', (p.request_amount + p.fee)::text]] end
       from h_payouts p
     ) t`,
  );
  await client.query(
    `insert into ledger_transfers (id, merchant_id, kind, reference_type, reference_id, ref_code, description, created_at)
     select id, $1, kind, reference_type, reference_id, ref_code, description, at from h_transfers order by at, id`,
    [merchantId],
  );
  await client.query(
    `with legs as (
       select t.id as transfer_id, t.kind, t.at, a.id as account_id, l.leg, l.amount
       from h_transfers t
       cross join lateral (select ord as leg, t.legs[ord][1] as kind, t.legs[ord][2]::bigint as amount
                           from generate_subscripts(t.legs, 1) ord) l
       join ledger_accounts a on a.merchant_id = $1 and a.kind = l.kind
       where l.amount <> 0
     ), chained as (
       select legs.*, a.balance + sum(legs.amount) over (partition by legs.account_id order by legs.at, legs.transfer_id, legs.leg
                                                         rows unbounded preceding) as after
       from legs join ledger_accounts a on a.id = legs.account_id
     )
     -- The kind written as the ledger module writes it (the insert trigger would look each one up);
     -- the history's per-day counts are kept by the statement's own trigger (migration 102).
     insert into ledger_postings (transfer_id, transfer_kind, account_id, amount, balance_before, balance_after, created_at)
     select transfer_id, kind, account_id, amount, after - amount, after, at from chained order by at, transfer_id, leg`,
    [merchantId],
  );
  await client.query(
    `update ledger_accounts a set balance = a.balance + s.total, version = a.version + s.n
     from (select p.account_id, sum(p.amount)::bigint as total, count(*) as n
           from ledger_postings p join h_transfers t on t.id = p.transfer_id group by p.account_id) s
     where a.id = s.account_id`,
  );
}

/** The daily payout limit's running totals (migration 020), as the disbursement path keeps them. */
async function backfillDailyTotals(client: pg.Client) {
  await client.query(
    `insert into disbursement_daily_totals (merchant_id, wib_date, total)
     select merchant_id, wib_date, sum(request_amount) from disbursements where status not in ('FAILED', 'REJECTED')
     group by merchant_id, wib_date
     on conflict (merchant_id, wib_date) do update set total = excluded.total`,
  );
}

