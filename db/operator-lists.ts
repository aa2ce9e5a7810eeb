// What an operator lists (ops banks:list, vendor:list, route:list, unresolved:list, jobs:list):
// plain SQL over a Reader (db/plain-reader.ts), so the ops CLI answers them on node-postgres
// alone. Code that already holds the slonik pool calls them through poolReader (db/pool.ts).
// Each is a short list: master data, vendors, routes, or rows bounded by a limit.
import type { Reader } from './plain-reader.ts';
import type { BankRow, EwalletRow } from './master-data.ts';
import type { RouteMode } from './vendors.ts';

/** Every bank, disabled ones included. */
export function listBanks(db: Reader): Promise<BankRow[]> {
  return db.rows(`select id, short_code, name, bi_code, is_enabled, sort_order from banks order by sort_order, short_code`);
}

/** Every e-wallet, disabled ones included. */
export function listEwallets(db: Reader): Promise<EwalletRow[]> {
  return db.rows(`select id, name, short_code, logo_url, is_enabled, sort_order from ewallets order by sort_order, short_code`);
}

export interface VendorListRow {
  code: string;
  kind: string;
  base_url: string;
  enabled: boolean;
  removed: boolean;
  sandbox: boolean;
}

/** Every vendor, removed ones included (they keep their code: what they held still names them). */
export function listVendors(db: Reader): Promise<VendorListRow[]> {
  return db.rows(`select code, kind, base_url, enabled, removed_at is not null as removed, sandbox from vendors order by code`);
}

export interface RouteListRow {
  merchant_id: string | null;
  method: string;
  vendor_code: string;
  priority: number;
  enabled: boolean;
  mode: RouteMode;
}

/** Every route, the platform's defaults (no merchant) first, with the vendor's switch and the mode. */
export function listRoutes(db: Reader): Promise<RouteListRow[]> {
  return db.rows(`
    select r.merchant_id, r.method, r.vendor_code, r.priority, v.enabled,
           coalesce(m.mode, 'priority') as mode
    from vendor_routes r join vendors v on v.code = r.vendor_code
    left join route_modes m on m.merchant_id is not distinct from r.merchant_id and m.method = r.method
    order by r.merchant_id nulls first, r.method, r.priority, r.vendor_code`);
}

export interface UnresolvedRow {
  kind: 'REFUND' | 'DISBURSEMENT' | 'SETTLEMENT';
  ref_code: string;
  merchant_id: string;
  amount: number;
  vendor_code: string | null;
  vendor_id: string | null;
  reason: string | null;
  unresolved_at: Date;
}

/** Refunds and payouts waiting for an operator (db/unresolved.ts), oldest first. */
export function listUnresolved(db: Reader, limit = 500): Promise<UnresolvedRow[]> {
  return db.rows(`
    select * from (
      select 'REFUND' as kind, ref_code, merchant_id, amount, vendor_code, vendor_refund_id as vendor_id, unresolved_reason as reason, unresolved_at
        from refunds where status = 'PENDING' and unresolved_at is not null
      union all
      select 'DISBURSEMENT', ref_code, merchant_id, request_amount, vendor_code, vendor_disbursement_id, unresolved_reason, unresolved_at
        from disbursements where status = 'ON_PROCESS' and unresolved_at is not null
      union all
      select 'SETTLEMENT', ref_code, merchant_id, net_payout, vendor_code, vendor_disbursement_id, unresolved_reason, unresolved_at
        from settlements where status = 'PROCESSING' and unresolved_at is not null
    ) waiting
    order by unresolved_at
    limit $1`, [limit]);
}

export interface JobListRow {
  id: string;
  queue: string;
  state: string;
  retry_count: number;
  data: unknown;
  output: unknown;
  created_on: Date;
  completed_on: Date | null;
}

/**
 * The newest jobs in pg-boss's job table, of one queue and one state when given. One statement
 * with a limit: pg-boss's findJobs reads a queue's every row, and there is one call per queue.
 */
export function listJobs(db: Reader, filter: { queue?: string; state?: string; limit: number }): Promise<JobListRow[]> {
  return db.rows(`
    select id::text as id, name as queue, state::text as state, retry_count, data, output, created_on, completed_on
    from pgboss.job
    where ($1::text is null or name = $1) and ($2::text is null or state::text = $2)
    order by created_on desc
    limit $3`, [filter.queue ?? null, filter.state ?? null, filter.limit]);
}

/** Whether pg-boss knows a queue of this name (jobs:list names an unknown one instead of listing nothing). */
export async function queueExists(db: Reader, name: string): Promise<boolean> {
  return (await db.rows(`select 1 from pgboss.queue where name = $1`, [name])).length > 0;
}
