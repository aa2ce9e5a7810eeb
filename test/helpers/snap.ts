// Fixtures for the SNAP BI tests: key pairs (Kasir's and the provider's, made once per test
// process), the simulator's SNAP dialect configured with them, Kasir's vendor record for it,
// the dialect's admin switches, and a whole stack (API, workers, simulator process) routed to a
// SNAP vendor. Nothing of Kasir's own is mocked.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { VendorRecord } from '../../gateways/gateway.ts';
import { startSimulatorInProcess, type InProcessSimulator } from './simulator.ts';
import { startVendorStack, type DialectVendor, type VendorStack } from './vendor-stack.ts';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface SnapKeys {
  kasirPrivatePem: string;
  kasirPublicPem: string;
  providerPrivatePem: string;
  providerPublicPem: string;
}

let keys: SnapKeys | null = null;

function pair() {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

/** Kasir's pair (it signs token requests) and the provider's (it signs notifies), once per process. */
export function snapKeys(): SnapKeys {
  if (!keys) {
    const kasir = pair();
    const provider = pair();
    keys = { kasirPrivatePem: kasir.privatePem, kasirPublicPem: kasir.publicPem, providerPrivatePem: provider.privatePem, providerPublicPem: provider.publicPem };
  }
  return keys;
}

/** The four PEMs as files (for vendor:add and openssl), in a fresh directory. */
export function snapKeyFiles(k: SnapKeys = snapKeys()) {
  const dir = mkdtempSync(`${tmpdir()}/kasir-snap-keys-`);
  const files = {
    dir,
    kasirPrivate: `${dir}/kasir-private.pem`,
    kasirPublic: `${dir}/kasir-public.pem`,
    providerPrivate: `${dir}/provider-private.pem`,
    providerPublic: `${dir}/provider-public.pem`,
  };
  writeFileSync(files.kasirPrivate, k.kasirPrivatePem, { mode: 0o600 });
  writeFileSync(files.kasirPublic, k.kasirPublicPem);
  writeFileSync(files.providerPrivate, k.providerPrivatePem, { mode: 0o600 });
  writeFileSync(files.providerPublic, k.providerPublicPem);
  return files;
}

/** What the provider issued Kasir, as its portal would show it. */
export const SNAP_ACCOUNT = {
  partnerId: 'KASIRTEST01',
  clientKey: 'kasir-test-client-key',
  clientSecret: 'kasir-test-client-secret-0123456789',
  merchantId: 'MKASIRTEST',
  channelId: '95221',
};

/** The simulator's SNAP_* variables for the test account and keys. */
export function snapSimulatorEnv(extra: Record<string, string> = {}, k: SnapKeys = snapKeys()): Record<string, string> {
  return {
    SIMULATOR_SNAP_PARTNER_ID: SNAP_ACCOUNT.partnerId,
    SIMULATOR_SNAP_CLIENT_KEY: SNAP_ACCOUNT.clientKey,
    SIMULATOR_SNAP_CLIENT_SECRET: SNAP_ACCOUNT.clientSecret,
    SIMULATOR_SNAP_MERCHANT_ID: SNAP_ACCOUNT.merchantId,
    SIMULATOR_SNAP_PARTNER_PUBLIC_KEY: k.kasirPublicPem,
    SIMULATOR_SNAP_PRIVATE_KEY: k.providerPrivatePem,
    ...extra,
  };
}

/** Kasir's vendor record for the dialect at `simulatorUrl` (base URL <sim>/snap). */
export function snapVendor(simulatorUrl: string, overrides: Record<string, string> = {}, code = 'snap', k: SnapKeys = snapKeys()): VendorRecord {
  return {
    code,
    kind: 'snap',
    baseUrl: `${simulatorUrl}/snap`,
    credentials: {
      partnerId: SNAP_ACCOUNT.partnerId,
      clientKey: SNAP_ACCOUNT.clientKey,
      clientSecret: SNAP_ACCOUNT.clientSecret,
      privateKeyPem: k.kasirPrivatePem,
      providerPublicKeyPem: k.providerPublicPem,
      channelId: SNAP_ACCOUNT.channelId,
      merchantId: SNAP_ACCOUNT.merchantId,
      notifySignature: 'rsa',
      qrQueryServiceCode: '47',
      // What the dialect takes, as Midtrans does: 7-digit bank codes and an aggregator's source account.
      bankBranchCode: '0000',
      sourceAccountNo: '0000000000',
      ...overrides,
    },
  };
}

export interface SnapStats {
  token_requests: number;
  calls: Record<string, number>;
  rejected: Record<string, number>;
  notifies_sent: number;
  /** Kasir's answers to notifies: responseCode (or "HTTP <status>" without one) → count. */
  notify_answers: Record<string, number>;
  live_tokens: number;
}

/** The dialect's admin switches (loopback, unsigned). */
export function snapAdmin(simulatorUrl: string) {
  const admin = `${simulatorUrl}/snap/admin`;
  return {
    async stats(): Promise<SnapStats> {
      return (await (await fetch(`${admin}/stats`)).json()) as SnapStats;
    },
    async expireTokens(): Promise<number> {
      return ((await (await fetch(`${admin}/expire-tokens`, { method: 'POST' })).json()) as { expired: number }).expired;
    },
    async setNotifyUrl(url: string): Promise<void> {
      const res = await fetch(`${admin}/notify-url`, { method: 'PUT', body: JSON.stringify({ url }) });
      if (res.status !== 200) throw new Error(`notify-url: ${res.status} ${await res.text()}`);
    },
    async keys(): Promise<Record<string, string | null>> {
      return (await (await fetch(`${admin}/keys`)).json()) as Record<string, string | null>;
    },
    /** The provider closes an unpaid QR with `status` (05 canceled, 06 failed, 08 expired, ...) and notifies it. */
    async close(reference: string, status: string): Promise<void> {
      const res = await fetch(`${admin}/close`, { method: 'POST', body: JSON.stringify({ reference, status }) });
      if (res.status !== 200) throw new Error(`close: ${res.status} ${await res.text()}`);
    },
  };
}

/** The simulator in this process with the SNAP test account. */
export function startSnapSimulatorInProcess(env: Record<string, string> = {}): Promise<InProcessSimulator> {
  return startSimulatorInProcess({ SIMULATOR_DISBURSE_DELAY_MS: '50', ...snapSimulatorEnv(env) });
}

export type SnapStack = VendorStack;

export interface SnapStackOptions {
  groups?: string[];
  env?: Record<string, string>;
  simulatorEnv?: Record<string, string>;
  credentials?: Record<string, string>;
  code?: string;
}

/**
 * A fresh database, the API, the simulator as a process whose SNAP dialect notifies Kasir's
 * POST /callbacks/<code>/v1.0/qr/qr-mpm-notify, and the SNAP vendor routed as the platform
 * default for QRIS, BANK and EWALLET; then the worker groups as processes.
 */
export function startSnapStack(t: Teardown, options: SnapStackOptions = {}): Promise<SnapStack> {
  const vendor: DialectVendor = {
    code: options.code ?? 'snap',
    simulatorEnv: (publicBase, code) => snapSimulatorEnv({ SIMULATOR_SNAP_NOTIFY_URL: `${publicBase}/callbacks/${code}/v1.0/qr/qr-mpm-notify`, ...options.simulatorEnv }),
    vendor: (url, code) => snapVendor(url, options.credentials, code),
  };
  return startVendorStack(t, [vendor], { groups: options.groups, env: options.env });
}
