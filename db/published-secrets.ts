// Secrets anyone can read: the defaults the simulator (and its vendor dialects) ship with, as
// written in this repository and its docs. A vendor holding one of them takes callbacks from
// anyone who has read the code, so Kasir never registers one on its own (npm start gives the
// simulator a random secret per installation), `vendor:add` refuses them, and the web process
// refuses to start while any vendor holds one, unless ALLOW_DEVELOPMENT_SECRETS=true says this
// is a development stack nobody else can reach.
//
// The list is Kasir's own copy (db/ does not import the simulator); a test walks every default
// of Kasir's and the simulator's configuration whose name says it holds a credential (secret,
// key, token, password) and checks each is on it.
import type { Db } from './pool.ts';
import type { Sealer } from './secrets.ts';
import { openAllVendors } from './vendors.ts';

export const PUBLISHED_SECRETS: ReadonlySet<string> = new Set([
  // The native simulator protocol's HMAC secret (SIMULATOR_SECRET's default).
  'sim-dev-secret',
  // The vendor dialects' sandbox keys (SIMULATOR_XENDIT_*, SIMULATOR_MIDTRANS_*, SIMULATOR_IRIS_*, SIMULATOR_SNAP_*).
  'xnd_development_kasir_simulator_key',
  'kasir-simulator-xendit-callback-token',
  'SB-Mid-server-kasir-simulator',
  'IRIS-creator-kasir-simulator',
  'IRIS-approver-kasir-simulator',
  'IRIS-merchant-kasir-simulator',
  'KASIRSIMIRISAPPROVERTOTP',
  'kasir-snap-simulator-client-secret',
  // The SNAP dialect's client key. An identifier rather than a secret in SNAP, but a vendor
  // holding the published one was registered against the simulator's published account.
  'kasir-snap-simulator-client',
]);

/** The credential names of a vendor that hold a published secret (empty when none does). */
export function publishedCredentials(credentials: Record<string, string>): string[] {
  return Object.entries(credentials)
    .filter(([, value]) => PUBLISHED_SECRETS.has(value))
    .map(([name]) => name);
}

/**
 * Vendors (not removed) holding a published secret, with the credential names that hold one.
 * A vendor whose credentials do not open is left out: it cannot verify anything either.
 */
export async function vendorsWithPublishedSecrets(db: Db, sealer: Sealer): Promise<Array<{ code: string; credentials: string[] }>> {
  const vendors = await openAllVendors(db, sealer);
  return vendors.flatMap(({ code, vendor }) => {
    const names = vendor ? publishedCredentials(vendor.credentials) : [];
    return names.length ? [{ code, credentials: names }] : [];
  });
}
