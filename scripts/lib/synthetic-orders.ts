// Synthetic orders in bulk (generate_series), for the export bench and the export tests: rows
// shaped like real ones (V1 and legacy, PAID and EXPIRED, customer fields filled), written
// straight into the table. No ledger postings: nothing here is money, only rows to export.
export type RunSql = (text: string, values: unknown[]) => Promise<unknown>;

/** Rows per statement: a few seconds each, well inside any statement timeout. */
const BATCH = 50_000;

/**
 * Inserts orders `from + 1` .. `from + count` of the merchant (`from` lets a caller grow a
 * merchant's orders in steps); created one second apart, ending now.
 */
export async function insertSyntheticOrders(run: RunSql, merchantId: string, count: number, from = 0): Promise<void> {
  for (let start = from; start < from + count; start += BATCH) {
    const end = Math.min(start + BATCH, from + count);
    await run(
      `insert into orders (id, merchant_id, ref_code, merchant_order_id, api, amount, status, customer_name,
                           customer_email, customer_phone, qr_token, vendor_rrn, paid_at, expires_at, created_at, updated_at)
       select gen_random_uuid(), $1::uuid, 'ORD-' || (1700000000 + n) || '-' || upper(substr(md5($1::text || n), 1, 10)),
              'INV-' || n, case when n % 5 = 0 then 'LEGACY' else 'V1' end, 10000 + (n::bigint * 7919) % 4990000,
              case when n % 10 = 0 then 'EXPIRED' else 'PAID' end, 'Pelanggan ' || n, 'pelanggan' || n || '@example.com',
              '628' || lpad((n % 1000000000)::text, 10, '0'), md5('qr' || $1::text || n),
              case when n % 10 = 0 then null else 'RRN' || lpad(n::text, 12, '0') end,
              case when n % 10 = 0 then null else t + interval '30 seconds' end, t + interval '1 hour', t, t
       from generate_series($2::int, $3::int) n, lateral (select now() - make_interval(secs => $4::int - n) as t) c`,
      [merchantId, start + 1, end, from + count],
    );
  }
}
