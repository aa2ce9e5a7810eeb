// Vendors (upstream gateways) and routing. Credentials are sealed at rest, bound to the
// vendor's code (db/secrets.ts), and opened only when a worker is about to call the vendor or
// verify its callback.
import { z } from 'zod';
import { sql, type Db } from './pool.ts';
import type { SealedPlace, Sealer } from './secrets.ts';

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

/** Adds a vendor, or updates kind/URL/credentials of an existing code (and re-enables it). */
export async function upsertVendor(
  db: Db,
  sealer: Sealer,
  input: { code: string; kind: string; baseUrl: string; credentials: Record<string, string> },
): Promise<void> {
  await db.query(sql.unsafe`
    insert into vendors (code, kind, base_url, credentials_enc)
    values (${input.code}, ${input.kind}, ${input.baseUrl}, ${sql.binary(sealer.seal(JSON.stringify(input.credentials), vendorCredentialsPlace(input.code)))})
    on conflict (code) do update
      set kind = excluded.kind, base_url = excluded.base_url, credentials_enc = excluded.credentials_enc,
          enabled = true, updated_at = now()`);
}

export async function setVendorEnabled(db: Db, code: string, enabled: boolean): Promise<boolean> {
  const updated = await db.maybeOneFirst(sql.type(z.object({ code: z.string() }))`
    update vendors set enabled = ${enabled}, updated_at = now() where code = ${code} returning code`);
  return updated !== null;
}

export async function listVendors(db: Db) {
  return db.any(sql.type(z.object({ code: z.string(), kind: z.string(), base_url: z.string(), enabled: z.boolean() }))`
    select code, kind, base_url, enabled from vendors order by code`);
}

export async function getVendor(db: Db, sealer: Sealer, code: string): Promise<VendorRecord | null> {
  const row = await db.maybeOne(sql.type(vendorRow)`
    select code, kind, base_url, credentials_enc, enabled from vendors where code = ${code}`);
  return row ? openVendor(sealer, row) : null;
}

/**
 * The enabled vendors to try for a merchant and method, best first: the merchant's own routes
 * when it has any for this method, else the platform default routes.
 */
export async function routeVendors(db: Db, sealer: Sealer, merchantId: string, method: RouteMethod): Promise<VendorRecord[]> {
  const rows = await db.any(sql.type(vendorRow)`
    with own as (
      select vendor_code, priority from vendor_routes where merchant_id = ${merchantId} and method = ${method}
    ), chosen as (
      select vendor_code, priority from own
      union all
      select vendor_code, priority from vendor_routes
      where merchant_id is null and method = ${method} and not exists (select 1 from own)
    )
    select v.code, v.kind, v.base_url, v.credentials_enc, v.enabled
    from chosen c join vendors v on v.code = c.vendor_code
    where v.enabled
    order by c.priority, v.code`);
  return rows.map((row) => openVendor(sealer, row));
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

export async function removeRoute(db: Db, input: { merchantId: string | null; method: RouteMethod; vendorCode: string }): Promise<boolean> {
  const removed = await db.maybeOneFirst(sql.type(z.object({ id: z.string() }))`
    delete from vendor_routes
    where merchant_id is not distinct from ${input.merchantId} and method = ${input.method} and vendor_code = ${input.vendorCode}
    returning id`);
  return removed !== null;
}

export async function listRoutes(db: Db) {
  return db.any(sql.type(
    z.object({ merchant_id: z.string().nullable(), method: z.string(), vendor_code: z.string(), priority: z.number(), enabled: z.boolean() }),
  )`
    select r.merchant_id, r.method, r.vendor_code, r.priority, v.enabled
    from vendor_routes r join vendors v on v.code = r.vendor_code
    order by r.merchant_id nulls first, r.method, r.priority, r.vendor_code`);
}

/** Records a verified callback; false when this event id was seen before (a duplicate). */
export async function recordCallback(
  db: Db,
  input: { vendorCode: string; eventId: string; type: string; reference: string; payload: unknown },
): Promise<boolean> {
  const inserted = await db.maybeOneFirst(sql.type(z.object({ event_id: z.string() }))`
    insert into vendor_callbacks (vendor_code, event_id, type, reference, payload)
    values (${input.vendorCode}, ${input.eventId}, ${input.type}, ${input.reference}, ${sql.jsonb(input.payload as never)})
    on conflict do nothing
    returning event_id`);
  return inserted !== null;
}
