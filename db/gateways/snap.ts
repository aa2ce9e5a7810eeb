// SNAP BI adapter: placeholder until issue 20 lands it (docs/vendors/snap.md). Registered so
// that vendor:add accepts the kind; any call to a SNAP vendor fails loudly meanwhile.
import type { Gateway, VendorRecord } from './gateway.ts';

export function createSnapGateway(vendor: VendorRecord, _options: { timeoutMs?: number } = {}): Gateway {
  throw new Error(`vendor ${vendor.code}: the snap adapter is not built yet`);
}
