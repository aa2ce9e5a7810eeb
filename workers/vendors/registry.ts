// Picks the adapter for a configured vendor by its kind. A kind without an adapter is a
// configuration error: it throws rather than letting orders reach a vendor nobody can talk to.
import type { Gateway, VendorRecord } from './gateway.ts';
import { createSimulatorGateway } from './simulator-adapter.ts';

export function gatewayFor(vendor: VendorRecord, options: { timeoutMs?: number } = {}): Gateway {
  switch (vendor.kind) {
    case 'simulator':
      return createSimulatorGateway(vendor, options);
    default:
      throw new Error(`vendor ${vendor.code}: no adapter for kind ${vendor.kind}`);
  }
}
