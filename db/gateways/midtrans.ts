// Midtrans adapter: placeholder until issue 18 lands it (docs/vendors/midtrans.md). Registered so
// that vendor:add accepts the kind; any call to a Midtrans vendor fails loudly meanwhile.
import type { Gateway, VendorRecord } from './gateway.ts';

export function createMidtransGateway(vendor: VendorRecord, _options: { timeoutMs?: number } = {}): Gateway {
  throw new Error(`vendor ${vendor.code}: the midtrans adapter is not built yet`);
}
