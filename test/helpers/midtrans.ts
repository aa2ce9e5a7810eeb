// Fixtures for the Midtrans tests: the keys a Midtrans sandbox account would show (server key,
// Iris creator/approver/merchant keys), the simulator's Midtrans and Iris dialects configured
// with them, Kasir's vendor record for them, the dialects' admin switches, and a whole stack
// (API, workers, simulator process) routed to a Midtrans vendor. Nothing of Kasir's is mocked.
import type { VendorRecord } from '../../gateways/gateway.ts';
import { startSimulatorInProcess, type InProcessSimulator } from './simulator.ts';
import { startVendorStack, type DialectVendor, type VendorStack } from './vendor-stack.ts';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export const MIDTRANS_ACCOUNT = {
  serverKey: 'SB-Mid-server-kasir-test-0123456789',
  irisCreatorKey: 'IRIS-creator-kasir-test-0123',
  irisApproverKey: 'IRIS-approver-kasir-test-0123',
  irisMerchantKey: 'IRIS-merchant-kasir-test-0123',
  /** The approver's two-factor secret (base32), as an authenticator app is given it. */
  irisApproverTotpSecret: 'KASIRTESTIRISAPPROVERTOTPSECRET2',
};

export function midtransSimulatorEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    SIMULATOR_MIDTRANS_SERVER_KEY: MIDTRANS_ACCOUNT.serverKey,
    SIMULATOR_IRIS_CREATOR_KEY: MIDTRANS_ACCOUNT.irisCreatorKey,
    SIMULATOR_IRIS_APPROVER_KEY: MIDTRANS_ACCOUNT.irisApproverKey,
    SIMULATOR_IRIS_MERCHANT_KEY: MIDTRANS_ACCOUNT.irisMerchantKey,
    SIMULATOR_IRIS_APPROVER_TOTP_SECRET: MIDTRANS_ACCOUNT.irisApproverTotpSecret,
    ...extra,
  };
}

/** Kasir's record for the dialects at `simulatorUrl`, as `vendor:add --kind midtrans` stores it. */
export function midtransVendor(simulatorUrl: string, options: { iris?: boolean; overrides?: Record<string, string> } = {}, code = 'midtrans'): VendorRecord {
  const iris = options.iris ?? true;
  return {
    code,
    kind: 'midtrans',
    baseUrl: `${simulatorUrl}/midtrans`,
    credentials: {
      serverKey: MIDTRANS_ACCOUNT.serverKey,
      qrisAcquirer: 'gopay',
      ...(iris
        ? {
            irisBaseUrl: `${simulatorUrl}/iris`,
            irisCreatorKey: MIDTRANS_ACCOUNT.irisCreatorKey,
            irisApproverKey: MIDTRANS_ACCOUNT.irisApproverKey,
            irisMerchantKey: MIDTRANS_ACCOUNT.irisMerchantKey,
            irisApproverTotpSecret: MIDTRANS_ACCOUNT.irisApproverTotpSecret,
          }
        : {}),
      ...options.overrides,
    },
  };
}

export interface DialectStats {
  calls: Record<string, number>;
  rejected: Record<string, number>;
  notifications_sent: number;
  /** Kasir's HTTP answers to notifications: status → count. */
  notify_answers: Record<string, number>;
  /** `<order_id or reference_no>:<status>` of every notification sent, in order. */
  notified: string[];
  payouts?: Array<{ reference_no: string; notes: string; status: string; amount: number }>;
}

async function post(url: string, body: unknown, method = 'POST') {
  const res = await fetch(url, { method, body: JSON.stringify(body) });
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${await res.text()}`);
}

/** The dialects' admin switches (loopback, unsigned). */
export function midtransAdmin(simulatorUrl: string) {
  return {
    async stats(): Promise<DialectStats> {
      return (await (await fetch(`${simulatorUrl}/midtrans/admin/stats`)).json()) as DialectStats;
    },
    async irisStats(): Promise<DialectStats> {
      return (await (await fetch(`${simulatorUrl}/iris/admin/stats`)).json()) as DialectStats;
    },
    garble: (count: number) => post(`${simulatorUrl}/midtrans/admin/garble`, { count }),
    irisGarble: (count: number) => post(`${simulatorUrl}/iris/admin/garble`, { count }),
    approveFault: (mode: 'error' | 'reject' | 'timeout', count = 1) => post(`${simulatorUrl}/iris/admin/approve-fault`, { mode, count }),
    setIrisNotifyUrl: (url: string) => post(`${simulatorUrl}/iris/admin/notify-url`, { url }, 'PUT'),
    /** The next `count` Midtrans refunds stay in flight (not listed, a re-send 406) until refundRelease. */
    refundHold: (count = 1) => post(`${simulatorUrl}/midtrans/admin/refund-hold`, { count }),
    refundRelease: () => post(`${simulatorUrl}/midtrans/admin/refund-release`, {}),
  };
}

export function startMidtransSimulatorInProcess(env: Record<string, string> = {}): Promise<InProcessSimulator> {
  return startSimulatorInProcess({ SIMULATOR_DISBURSE_DELAY_MS: '50', ...midtransSimulatorEnv(env) });
}

export type MidtransStack = VendorStack;

/** A Midtrans vendor for startVendorStack: Iris notifies Kasir's POST /callbacks/<code>. */
export function midtransDialectVendor(code = 'midtrans', extra: Partial<DialectVendor> = {}): DialectVendor {
  return {
    code,
    simulatorEnv: (publicBase, c) => midtransSimulatorEnv({ SIMULATOR_IRIS_NOTIFY_URL: `${publicBase}/callbacks/${c}` }),
    vendor: (url, c) => midtransVendor(url, {}, c),
    ...extra,
  };
}

/**
 * A fresh database, the API, the simulator as a process whose Iris dialect notifies Kasir's
 * POST /callbacks/<code> (payments are notified there through X-Override-Notification), and the
 * Midtrans vendor routed as the platform default for QRIS, BANK and EWALLET; then the workers.
 */
export function startMidtransStack(t: Teardown, options: { groups?: string[]; env?: Record<string, string>; code?: string } = {}): Promise<MidtransStack> {
  return startVendorStack(t, [midtransDialectVendor(options.code)], { groups: options.groups, env: options.env });
}
