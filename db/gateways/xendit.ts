// Xendit adapter: placeholder until issue 18 lands it (docs/vendors/xendit.md). Registered so
// that vendor:add accepts the kind; any call to a Xendit vendor fails loudly meanwhile.
import type { Gateway, VendorRecord } from './gateway.ts';

export function createXenditGateway(vendor: VendorRecord, _options: { timeoutMs?: number } = {}): Gateway {
  throw new Error(`vendor ${vendor.code}: the xendit adapter is not built yet`);
}
