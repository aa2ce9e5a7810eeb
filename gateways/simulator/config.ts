// Simulator configuration from the environment, parsed once; a bad value stops start-up.
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { z } from 'zod';

/** Dev only: anyone who reads this repository knows it. Set SIMULATOR_SECRET anywhere shared. */
export const DEV_SECRET = 'sim-dev-secret';

const envSchema = z.object({
  SIMULATOR_PORT: z.coerce.number().int().min(0).max(65535).default(4010),
  SIMULATOR_HOST: z.string().min(1).default('127.0.0.1'),
  SIMULATOR_CODE: z.string().regex(/^[A-Za-z0-9_-]{1,32}$/, 'letters, digits, "_" or "-", up to 32').default('sim'),
  SIMULATOR_SECRET: z.string().min(8).default(DEV_SECRET),
  SIMULATOR_DISBURSE_DELAY_MS: z.coerce.number().int().min(0).max(3_600_000).default(2000),
  SIMULATOR_AUTO_PAY_SECONDS: z.coerce.number().positive().max(86_400).optional(),
  SIMULATOR_MERCHANT_NAME: z.string().min(1).default('KASIR DEMO MERCHANT'),
  SIMULATOR_MERCHANT_CITY: z.string().min(1).default('JAKARTA'),
  SIMULATOR_NMID: z.string().regex(/^[A-Z0-9]{1,15}$/, 'uppercase letters or digits, up to 15').default('ID1026000000001'),
  // Where the simulator keeps its state across restarts (gateways/simulator/journal.ts); unset,
  // state lives in memory only. A path, created with its directory when missing.
  SIMULATOR_STATE_FILE: z.string().min(1).optional(),
  // The keys the vendor dialects (docs/simulator.md) accept and sign with, like a sandbox
  // account's dashboard would show them. Development defaults; set them to test key handling.
  SIMULATOR_XENDIT_SECRET_KEY: z.string().min(8).default('xnd_development_kasir_simulator_key'),
  SIMULATOR_XENDIT_CALLBACK_TOKEN: z.string().min(8).default('kasir-simulator-xendit-callback-token'),
  SIMULATOR_MIDTRANS_SERVER_KEY: z.string().min(8).default('SB-Mid-server-kasir-simulator'),
  SIMULATOR_IRIS_CREATOR_KEY: z.string().min(8).default('IRIS-creator-kasir-simulator'),
  SIMULATOR_IRIS_APPROVER_KEY: z.string().min(8).default('IRIS-approver-kasir-simulator'),
  SIMULATOR_IRIS_MERCHANT_KEY: z.string().min(8).default('IRIS-merchant-kasir-simulator'),
  // The approver's two-factor secret (base32, as an authenticator app is given it): approvals
  // must carry its current TOTP code (RFC 6238: SHA-1, 6 digits, 30 s).
  SIMULATOR_IRIS_APPROVER_TOTP_SECRET: z.string().regex(/^[A-Z2-7]{16,}=*$/, 'base32, at least 16 characters').default('KASIRSIMIRISAPPROVERTOTP'),
  // Where Xendit and Iris post callbacks: set once per account in their dashboards, never per
  // request (Midtrans payments take X-Override-Notification per charge instead).
  SIMULATOR_XENDIT_CALLBACK_URL: z.url({ protocol: /^https?$/ }).optional(),
  SIMULATOR_IRIS_NOTIFY_URL: z.url({ protocol: /^https?$/ }).optional(),
  // SNAP BI (dialects/snap.ts): what a provider issues a partner, the partner's public key it
  // registers, and the provider's own signing key. Keys are inline PEM or a file path; unset,
  // the dialect generates them when first used and shows them at GET /snap/admin/keys.
  SIMULATOR_SNAP_PARTNER_ID: z.string().min(1).max(36).default('KASIRSIM01'),
  SIMULATOR_SNAP_CLIENT_KEY: z.string().min(1).max(256).default('kasir-snap-simulator-client'),
  SIMULATOR_SNAP_CLIENT_SECRET: z.string().min(8).default('kasir-snap-simulator-client-secret'),
  SIMULATOR_SNAP_MERCHANT_ID: z.string().min(1).max(64).default('KASIRSIM'),
  SIMULATOR_SNAP_PARTNER_PUBLIC_KEY: z.string().min(1).optional(),
  SIMULATOR_SNAP_PRIVATE_KEY: z.string().min(1).optional(),
  SIMULATOR_SNAP_TOKEN_SECONDS: z.coerce.number().int().min(1).max(86_400).default(900),
  SIMULATOR_SNAP_NOTIFY_URL: z.url({ protocol: /^https?$/ }).optional(),
  SIMULATOR_SNAP_NOTIFY_SIGNATURE: z.enum(['rsa', 'hmac']).default('rsa'),
  SIMULATOR_SNAP_QR_QUERY_SERVICE_CODE: z.enum(['47', '51']).default('47'),
  // originalPartnerReferenceNo in notifies: optional at Finpay, absent at Netzme, so left out
  // unless set to `send` (iFortepay, NICEPAY send it).
  SIMULATOR_SNAP_NOTIFY_PARTNER_REFERENCE: z.enum(['omit', 'send']).default('omit'),
  // Transfers and inquiries as Midtrans takes them: beneficiaryBankCode of 7 digits (3-digit BI
  // code + 4-digit branch; 3 for providers such as Espay) and a mandatory sourceAccountNo
  // (0000000000, an aggregator's).
  SIMULATOR_SNAP_BANK_CODE_DIGITS: z.enum(['3', '7']).default('7'),
  SIMULATOR_SNAP_SOURCE_ACCOUNT_NO: z.string().regex(/^\d{1,19}$/).default('0000000000'),
});

/** A PEM given inline or as a file path, checked to be the kind of key it should be. */
function pemOf(name: string, value: string | undefined, kind: 'private' | 'public'): string | null {
  if (value === undefined) return null;
  let pem = value;
  if (!value.includes('-----BEGIN')) {
    try {
      pem = readFileSync(value, 'utf8');
    } catch (err) {
      throw new Error(`invalid simulator configuration: ${name}: cannot read ${value} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  try {
    const key = kind === 'private' ? createPrivateKey(pem) : createPublicKey(pem);
    if (key.asymmetricKeyType !== 'rsa') throw new Error(`an ${key.asymmetricKeyType} key`);
    return key.export({ type: kind === 'private' ? 'pkcs8' : 'spki', format: 'pem' }).toString();
  } catch (err) {
    throw new Error(`invalid simulator configuration: ${name}: not an RSA ${kind} key (${(err as Error).message.split('\n')[0]})`);
  }
}

export interface SimulatorConfig {
  host: string;
  port: number;
  code: string;
  secret: string;
  disburseDelayMs: number;
  autoPaySeconds: number | null;
  merchantName: string;
  merchantCity: string;
  nmid: string;
  /** The journal that keeps state across restarts; null: memory only. */
  stateFile: string | null;
  /** Credentials of the vendor dialects, as the vendor would issue them. */
  dialects: {
    xendit: { secretKey: string; callbackToken: string; callbackUrl: string | null };
    midtrans: { serverKey: string };
    iris: { creatorKey: string; approverKey: string; merchantKey: string; approverTotpSecret: string; notifyUrl: string | null };
    snap: SnapDialectConfig;
  };
}

export interface SnapDialectConfig {
  partnerId: string;
  clientKey: string;
  clientSecret: string;
  merchantId: string;
  /** Kasir's (the partner's) public key, SPKI PEM; null: generated with its private half. */
  partnerPublicKeyPem: string | null;
  /** The provider's private key, PKCS#8 PEM; null: generated. */
  privateKeyPem: string | null;
  tokenSeconds: number;
  /** Where payment notifies go (set later through /snap/admin/notify-url when null). */
  notifyUrl: string | null;
  notifySignature: 'rsa' | 'hmac';
  qrQueryServiceCode: '47' | '51';
  /** Whether notifies carry originalPartnerReferenceNo (the harsher default: they do not). */
  notifyPartnerReference: boolean;
  bankCodeDigits: 3 | 7;
  sourceAccountNo: string;
}

/** What createSimulatorApp takes: the configuration less where to listen, and a logger. */
export type SimulatorOptions = Omit<SimulatorConfig, 'host' | 'port'> & { logger: Logger };

/** Throws an Error naming the offending variable. Empty variables count as unset. */
export function loadSimulatorConfig(env: Record<string, string | undefined>): SimulatorConfig {
  const set = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const parsed = envSchema.safeParse(set);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`invalid simulator configuration: ${issue.path.join('.')}: ${issue.message}`);
  }
  const e = parsed.data;
  return {
    host: e.SIMULATOR_HOST,
    port: e.SIMULATOR_PORT,
    code: e.SIMULATOR_CODE,
    secret: e.SIMULATOR_SECRET,
    disburseDelayMs: e.SIMULATOR_DISBURSE_DELAY_MS,
    autoPaySeconds: e.SIMULATOR_AUTO_PAY_SECONDS ?? null,
    merchantName: e.SIMULATOR_MERCHANT_NAME,
    merchantCity: e.SIMULATOR_MERCHANT_CITY,
    nmid: e.SIMULATOR_NMID,
    stateFile: e.SIMULATOR_STATE_FILE ?? null,
    dialects: {
      xendit: { secretKey: e.SIMULATOR_XENDIT_SECRET_KEY, callbackToken: e.SIMULATOR_XENDIT_CALLBACK_TOKEN, callbackUrl: e.SIMULATOR_XENDIT_CALLBACK_URL ?? null },
      midtrans: { serverKey: e.SIMULATOR_MIDTRANS_SERVER_KEY },
      iris: {
        creatorKey: e.SIMULATOR_IRIS_CREATOR_KEY,
        approverKey: e.SIMULATOR_IRIS_APPROVER_KEY,
        merchantKey: e.SIMULATOR_IRIS_MERCHANT_KEY,
        approverTotpSecret: e.SIMULATOR_IRIS_APPROVER_TOTP_SECRET,
        notifyUrl: e.SIMULATOR_IRIS_NOTIFY_URL ?? null,
      },
      snap: {
        partnerId: e.SIMULATOR_SNAP_PARTNER_ID,
        clientKey: e.SIMULATOR_SNAP_CLIENT_KEY,
        clientSecret: e.SIMULATOR_SNAP_CLIENT_SECRET,
        merchantId: e.SIMULATOR_SNAP_MERCHANT_ID,
        partnerPublicKeyPem: pemOf('SIMULATOR_SNAP_PARTNER_PUBLIC_KEY', e.SIMULATOR_SNAP_PARTNER_PUBLIC_KEY, 'public'),
        privateKeyPem: pemOf('SIMULATOR_SNAP_PRIVATE_KEY', e.SIMULATOR_SNAP_PRIVATE_KEY, 'private'),
        tokenSeconds: e.SIMULATOR_SNAP_TOKEN_SECONDS,
        notifyUrl: e.SIMULATOR_SNAP_NOTIFY_URL ?? null,
        notifySignature: e.SIMULATOR_SNAP_NOTIFY_SIGNATURE,
        qrQueryServiceCode: e.SIMULATOR_SNAP_QR_QUERY_SERVICE_CODE,
        notifyPartnerReference: e.SIMULATOR_SNAP_NOTIFY_PARTNER_REFERENCE === 'send',
        bankCodeDigits: e.SIMULATOR_SNAP_BANK_CODE_DIGITS === '3' ? 3 : 7,
        sourceAccountNo: e.SIMULATOR_SNAP_SOURCE_ACCOUNT_NO,
      },
    },
  };
}
