// The vendor adapter a job handler calls, with the process's configured vendor timeout. Kept
// apart from workers/context.ts so that worker groups that never call a vendor (csv) do not
// load the HTTP client and the adapters.
import type { Gateway, VendorRecord } from '../gateways/gateway.ts';
import { gatewayFor } from '../gateways/registry.ts';
import type { WorkerContext } from './context.ts';

export function gatewayOf(ctx: WorkerContext, vendor: VendorRecord): Gateway {
  return gatewayFor(vendor, { timeoutMs: ctx.config.VENDOR_TIMEOUT_MS });
}
