// Vendors (upstream gateways) and routing. Credentials are sealed at rest, bound to the
// vendor's code (db/secrets.ts), and opened only when a worker is about to call the vendor or
// verify its callback.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { sql, type Db } from './pool.ts';
import type { SealedPlace, Sealer } from './secrets.ts';
import { codeRow, countRow, idRow } from './row-shapes.ts';

/** A vendor as the adapters see it, credentials opened. */
export interface VendorRecord {
  code: string;
  kind: string;
  baseUrl: string;
  /** Decrypted credentials; shape depends on kind. */
  credentials: Record<string, string>;
}

export const routeMethod = z.enum(['QRIS', 'BANK', 'EWALLET']);
export type RouteMethod = z.infer<typeof routeMethod>;

const vendorRow = z.object({
  code: z.string(),
  kind: z.string(),
  base_url: z.string(),
  credentials_enc: z.instanceof(Buffer),
  enabled: z.boolean(),
});
type VendorRow = z.infer<typeof vendorRow>;

export const vendorCredentialsPlace = (code: string): SealedPlace => ({ table: 'vendors', column: 'credentials_enc', rowId: code });

export function openVendor(sealer: Sealer, row: VendorRow): VendorRecord {
  return {
    code: row.code,
    kind: row.kind,
    baseUrl: row.base_url,
    credentials: JSON.parse(sealer.open(row.credentials_enc, vendorCredentialsPlace(row.code))) as Record<string, string>,
  };
}

/** Vendor codes as vendor:add accepts them (and the vendors table's check): nothing else names a vendor. */
export const VENDOR_CODE = /^[a-z0-9][a-z0-9_-]{0,31}$/;

/** Adds a vendor, or updates kind/URL/credentials of an existing code (and re-enables it, or brings a removed one back). */
export async function upsertVendor(
  db: Db,
  sealer: Sealer,
  /** `sandbox`: the vendor's sandbox environment, marked by the operator (db/sandbox-credentials.ts). */
  input: { code: string; kind: string; baseUrl: string; credentials: Record<string, string>; sandbox?: boolean },
): Promise<void> {
  await db.query(sql.unsafe`
    insert into vendors (code, kind, base_url, credentials_enc, sandbox)
    values (${input.code}, ${input.kind}, ${input.baseUrl}, ${sql.binary(sealer.seal(JSON.stringify(input.credentials), vendorCredentialsPlace(input.code)))},
            ${input.sandbox ?? false})
    on conflict (code) do update
      set kind = excluded.kind, base_url = excluded.base_url, credentials_enc = excluded.credentials_enc, sandbox = excluded.sandbox,
          enabled = true, removed_at = null, updated_at = now()`);
}

/** Replaces a vendor's base URL and credentials, leaving whether it is enabled (and its routes) as they are. */
export async function updateVendorConnection(db: Db, sealer: Sealer, code: string, baseUrl: string, credentials: Record<string, string>): Promise<void> {
  await db.query(sql.unsafe`
    update vendors
    set base_url = ${baseUrl}, credentials_enc = ${sql.binary(sealer.seal(JSON.stringify(credentials), vendorCredentialsPlace(code)))}, updated_at = now()
    where code = ${code} and removed_at is null`);
}

/**
 * How long after an order expired its vendor may still report it paid. applyPayment
 * (db/orders.ts) takes a payment on an EXPIRED order whenever it comes (money received is never
 * dropped), and it comes late when a payer paid at the last moment, through the vendor's
 * callback retries, or through the reconciliation of the payment's day, which runs the night
 * after: within two days of the expiry.
 */
export const LATE_PAYMENT_HOURS = 48;

const inFlightRow = z.object({ orders: z.number(), expired_orders: z.number(), disbursements: z.number(), settlements: z.number(), refunds: z.number() });
export type VendorInFlight = z.infer<typeof inFlightRow>;

/**
 * What a vendor still holds in flight: records whose money or payer may still move at it. Orders
 * being created there or waiting for their payer, and (`expired_orders`) orders that expired in
 * the last LATE_PAYMENT_HOURS, whose payment it may still report.
 */
export async function vendorInFlight(db: Db, code: string): Promise<VendorInFlight> {
  return db.one(sql.type(inFlightRow)`
    select
      (select count(*) from orders where (status = 'CREATING' and pending_vendor = ${code}) or (status = 'PENDING' and vendor_code = ${code}))::int as orders,
      (select count(*) from orders where status = 'EXPIRED' and vendor_code = ${code}
                                      and expires_at > now() - make_interval(hours => ${LATE_PAYMENT_HOURS}))::int as expired_orders,
      (select count(*) from disbursements where status = 'ON_PROCESS' and vendor_code = ${code})::int as disbursements,
      (select count(*) from settlements where status = 'PROCESSING' and vendor_code = ${code})::int as settlements,
      (select count(*) from refunds where status = 'PENDING' and vendor_code = ${code})::int as refunds`);
}

export type Removal =
  | { outcome: 'removed'; held: VendorInFlight }
  /** Not removed: it still holds these (and `force` was not given). */
  | { outcome: 'holds'; held: VendorInFlight }
  | { outcome: 'unknown' };

/**
 * Removes a vendor: its routes go, its credentials are erased, and it is neither called nor
 * believed again (getVendor no longer finds it). The row stays for the records that name it.
 * Refused while it holds anything in flight (vendorInFlight), unless `force`: once removed,
 * nothing it says about those records is believed. 'unknown': no such vendor (or removed already).
 *
 * The check and the removal are one transaction holding the vendor row FOR UPDATE. Every
 * statement that hands the vendor a record (an order's pending_vendor or vendor_code, a payout's
 * or refund's vendor_code) takes a key-share lock on that row through its foreign key, which
 * FOR UPDATE excludes: one already made waits for this lock's holder to see it committed and
 * counts it; none can commit between the count and the removal.
 */
export async function removeVendor(db: Db, sealer: Sealer, code: string, options: { force?: boolean } = {}): Promise<Removal> {
  return db.transaction(async (tx): Promise<Removal> => {
    const found = await tx.maybeOneFirst(sql.type(codeRow)`
      select code from vendors where code = ${code} and removed_at is null for update`);
    if (found === null) return { outcome: 'unknown' };
    const held = await vendorInFlight(tx, code);
    if (!options.force && Object.values(held).some((n) => n > 0)) return { outcome: 'holds', held };
    await tx.query(sql.unsafe`
      update vendors
      set removed_at = now(), enabled = false, updated_at = now(),
          credentials_enc = ${sql.binary(sealer.seal('{}', vendorCredentialsPlace(code)))}
      where code = ${code}`);
    await tx.query(sql.unsafe`delete from vendor_routes where vendor_code = ${code}`);
    return { outcome: 'removed', held };
  });
}

export async function setVendorEnabled(db: Db, code: string, enabled: boolean): Promise<boolean> {
  const updated = await db.maybeOneFirst(sql.type(codeRow)`
    update vendors set enabled = ${enabled}, updated_at = now() where code = ${code} and removed_at is null returning code`);
  return updated !== null;
}

/**
 * Vendors marked --sandbox and not removed (a disabled one still applies callbacks to what it
 * holds): a stack holding one says so in /healthz and its startup log.
 */
export async function sandboxVendorCodes(db: Db): Promise<readonly string[]> {
  return db.anyFirst(sql.type(codeRow)`
    select code from vendors where sandbox and removed_at is null order by code`);
}

/**
 * A vendor by code, enabled or not (a disabled vendor is still reconciled, and its callbacks
 * still apply to the records it holds); null for an unknown or removed one.
 */
export async function getVendor(db: Db, sealer: Sealer, code: string): Promise<VendorRecord | null> {
  if (!VENDOR_CODE.test(code)) return null;
  const row = await db.maybeOne(sql.type(vendorRow)`
    select code, kind, base_url, credentials_enc, enabled from vendors where code = ${code} and removed_at is null`);
  return row ? openVendor(sealer, row) : null;
}

/** Every vendor not removed, each with its credentials opened or the reason they do not open. */
export async function openAllVendors(db: Db, sealer: Sealer): Promise<Array<{ code: string; vendor: VendorRecord | null; problem: string | null }>> {
  const rows = await db.any(sql.type(vendorRow)`
    select code, kind, base_url, credentials_enc, enabled from vendors where removed_at is null order by code`);
  return rows.map((row) => {
    try {
      return { code: row.code, vendor: openVendor(sealer, row), problem: null };
    } catch (err) {
      return { code: row.code, vendor: null, problem: (err as Error).message };
    }
  });
}

export const routeMode = z.enum(['priority', 'adaptive']);
export type RouteMode = z.infer<typeof routeMode>;

/** A routed vendor, with the priority its route gives it (lower first). */
export type RoutedVendor = VendorRecord & { priority: number };

const routeOfRow = vendorRow.extend({ priority: z.number(), mode: routeMode });

/**
 * The route for a merchant and method: the merchant's own routes when it has any for this
 * method, else the platform default routes; its enabled vendors in priority order, and its mode
 * (the merchant's own route's mode, or the platform's; 'priority' when none was set). How an
 * adaptive route reorders them is db/routing.ts.
 */
export async function routeOf(db: Db, sealer: Sealer, merchantId: string, method: RouteMethod): Promise<{ mode: RouteMode; vendors: RoutedVendor[] }> {
  const rows = await db.any(sql.type(routeOfRow)`
    with own as (
      select vendor_code, priority from vendor_routes where merchant_id = ${merchantId} and method = ${method}
    ), chosen as (
      select vendor_code, priority, ${merchantId}::uuid as scope from own
      union all
      select vendor_code, priority, null::uuid from vendor_routes
      where merchant_id is null and method = ${method} and not exists (select 1 from own)
    )
    select v.code, v.kind, v.base_url, v.credentials_enc, v.enabled, c.priority,
           coalesce((select m.mode from route_modes m where m.merchant_id is not distinct from c.scope and m.method = ${method}), 'priority') as mode
    from chosen c join vendors v on v.code = c.vendor_code
    where v.enabled
    order by c.priority, v.code`);
  return { mode: rows[0]?.mode ?? 'priority', vendors: rows.map((row) => ({ ...openVendor(sealer, row), priority: row.priority })) };
}

/** The enabled vendors to try for a merchant and method, in priority order (routeOf's). */
export async function routeVendors(db: Db, sealer: Sealer, merchantId: string, method: RouteMethod): Promise<RoutedVendor[]> {
  return (await routeOf(db, sealer, merchantId, method)).vendors;
}

/**
 * Whether `code` may be handed a record now (enabled, not removed), holding its row FOR SHARE to
 * the end of the transaction: a disable or removal committed before this is seen, and one after
 * waits until the record handed over is committed (and counted by removeVendor's in-flight check).
 */
export async function holdUsableVendor(db: Db, code: string): Promise<boolean> {
  const row = await db.maybeOneFirst(sql.type(codeRow)`
    select code from vendors where code = ${code} and enabled and removed_at is null for share`);
  return row !== null;
}

export async function setRoute(
  db: Db,
  input: { merchantId: string | null; method: RouteMethod; vendorCode: string; priority: number },
): Promise<void> {
  await db.query(sql.unsafe`
    insert into vendor_routes (merchant_id, method, vendor_code, priority)
    values (${input.merchantId}, ${input.method}, ${input.vendorCode}, ${input.priority})
    on conflict on constraint vendor_routes_key do update set priority = excluded.priority`);
}

/** Sets how a route orders its vendors (merchantId null: the platform default route). */
export async function setRouteMode(db: Db, input: { merchantId: string | null; method: RouteMethod; mode: RouteMode }): Promise<void> {
  await db.query(sql.unsafe`
    insert into route_modes (merchant_id, method, mode) values (${input.merchantId}, ${input.method}, ${input.mode})
    on conflict on constraint route_modes_key do update set mode = excluded.mode, updated_at = now()`);
}

export async function removeRoute(db: Db, input: { merchantId: string | null; method: RouteMethod; vendorCode: string }): Promise<boolean> {
  const removed = await db.maybeOneFirst(sql.type(idRow)`
    delete from vendor_routes
    where merchant_id is not distinct from ${input.merchantId} and method = ${input.method} and vendor_code = ${input.vendorCode}
    returning id`);
  return removed !== null;
}

/** Longest event id stored as sent; a longer one is stored as its digest (storedEventId). */
const MAX_EVENT_ID = 200;

/**
 * The key a vendor's event id is recorded under: itself when short, else `sha256:<hex>` of it.
 * Event ids come from vendors' bodies and key a btree, whose rows cannot exceed ~2.7 kB; the
 * digest keeps one id one key, so duplicates are still recognised.
 */
export function storedEventId(eventId: string): string {
  return eventId.length <= MAX_EVENT_ID ? eventId : `sha256:${createHash('sha256').update(eventId).digest('hex')}`;
}

const recordCallbackRow = z.object({ event_id: z.string() });

/** Records a verified callback; false when this event id was seen before (a duplicate). */
export async function recordCallback(
  db: Db,
  input: { vendorCode: string; eventId: string; type: string; reference: string; payload: unknown },
): Promise<boolean> {
  const inserted = await db.maybeOneFirst(sql.type(recordCallbackRow)`
    insert into vendor_callbacks (vendor_code, event_id, type, reference, payload)
    values (${input.vendorCode}, ${storedEventId(input.eventId)}, ${input.type}, ${input.reference}, ${sql.jsonb(input.payload as never)})
    on conflict do nothing
    returning event_id`);
  return inserted !== null;
}

// ---------------------------------------------------------------- retention (db/retention.ts)

/** Callbacks received before `before` that still hold their payload. */
export function countCallbackPayloads(db: Db, before: Date) {
  return db.oneFirst(sql.type(countRow)`
    select count(*)::bigint as n from vendor_callbacks where received_at < ${before.toISOString()}::timestamptz and payload is not null`);
}

/**
 * Drops the payload of up to `batch` callbacks received before `before`; their key (vendor and
 * event id), which recognises a repeated callback, stays until deleteCallbackKeys.
 */
export function dropCallbackPayloads(db: Db, before: Date, batch: number) {
  return db.oneFirst(sql.type(countRow)`
    with dropped as (
      update vendor_callbacks c set payload = null
      from (select vendor_code, event_id from vendor_callbacks
            where received_at < ${before.toISOString()}::timestamptz and payload is not null
            limit ${batch} for update skip locked) k
      where c.vendor_code = k.vendor_code and c.event_id = k.event_id
      returning 1
    )
    select count(*)::int as n from dropped`);
}

export function countCallbackKeys(db: Db, before: Date) {
  return db.oneFirst(sql.type(countRow)`
    select count(*)::bigint as n from vendor_callbacks where received_at < ${before.toISOString()}::timestamptz`);
}

/** Deletes up to `batch` callback keys received before `before`: long past any vendor's retries. */
export function deleteCallbackKeys(db: Db, before: Date, batch: number) {
  return db.oneFirst(sql.type(countRow)`
    with gone as (
      delete from vendor_callbacks where (vendor_code, event_id) in (
        select vendor_code, event_id from vendor_callbacks where received_at < ${before.toISOString()}::timestamptz
        limit ${batch} for update skip locked)
      returning 1
    )
    select count(*)::int as n from gone`);
}
