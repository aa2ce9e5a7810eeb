// Fixtures for the Xendit tests: the test account (the keys a Xendit dashboard shows), the
// simulator's Xendit dialect configured with them, Kasir's vendor record for it, and the
// dialect's admin view.
import type { VendorRecord } from '../../gateways/gateway.ts';
import type { DialectVendor } from './vendor-stack.ts';

/** What Xendit's dashboard shows a test-mode account. */
export const XENDIT_ACCOUNT = {
  secretKey: 'xnd_development_kasirTestSecretKey0123456789',
  callbackToken: 'kasir-test-xendit-verification-token-0123456789',
};

export function xenditSimulatorEnv(callbackUrl: string | null, extra: Record<string, string> = {}): Record<string, string> {
  return {
    SIMULATOR_XENDIT_SECRET_KEY: XENDIT_ACCOUNT.secretKey,
    SIMULATOR_XENDIT_CALLBACK_TOKEN: XENDIT_ACCOUNT.callbackToken,
    ...(callbackUrl ? { SIMULATOR_XENDIT_CALLBACK_URL: callbackUrl } : {}),
    ...extra,
  };
}

/** Kasir's vendor record for the dialect at `simulatorUrl` (base URL <sim>/xendit). */
export function xenditVendor(simulatorUrl: string, code = 'xendit', overrides: Record<string, string> = {}): VendorRecord {
  return { code, kind: 'xendit', baseUrl: `${simulatorUrl}/xendit`, credentials: { ...XENDIT_ACCOUNT, ...overrides } };
}

/** A Xendit vendor for startVendorStack: callbacks to Kasir's POST /callbacks/<code>. */
export function xenditDialectVendor(code = 'xendit', extra: Partial<DialectVendor> = {}): DialectVendor {
  return {
    code,
    simulatorEnv: (publicBase, c) => xenditSimulatorEnv(`${publicBase}/callbacks/${c}`),
    vendor: (url, c) => xenditVendor(url, c),
    ...extra,
  };
}

export interface XenditStats {
  calls: Record<string, number>;
  refunds: Array<{ id: string; qrpy_id: string; status: string; refund_amount: number }>;
}

export async function xenditStats(simulatorUrl: string): Promise<XenditStats> {
  return (await (await fetch(`${simulatorUrl}/xendit/admin/stats`)).json()) as XenditStats;
}
