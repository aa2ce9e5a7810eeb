// Simulator configuration from the environment, parsed once; a bad value stops start-up.
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
  // The keys the vendor dialects (docs/simulator.md) accept and sign with, like a sandbox
  // account's dashboard would show them. Development defaults; set them to test key handling.
  SIMULATOR_XENDIT_SECRET_KEY: z.string().min(8).default('xnd_development_kasir_simulator_key'),
  SIMULATOR_XENDIT_CALLBACK_TOKEN: z.string().min(8).default('kasir-simulator-xendit-callback-token'),
  SIMULATOR_MIDTRANS_SERVER_KEY: z.string().min(8).default('SB-Mid-server-kasir-simulator'),
  SIMULATOR_IRIS_CREATOR_KEY: z.string().min(8).default('IRIS-creator-kasir-simulator'),
  SIMULATOR_IRIS_APPROVER_KEY: z.string().min(8).default('IRIS-approver-kasir-simulator'),
  SIMULATOR_IRIS_MERCHANT_KEY: z.string().min(8).default('IRIS-merchant-kasir-simulator'),
});

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
  /** Credentials of the vendor dialects, as the vendor would issue them. */
  dialects: {
    xendit: { secretKey: string; callbackToken: string };
    midtrans: { serverKey: string };
    iris: { creatorKey: string; approverKey: string; merchantKey: string };
  };
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
    dialects: {
      xendit: { secretKey: e.SIMULATOR_XENDIT_SECRET_KEY, callbackToken: e.SIMULATOR_XENDIT_CALLBACK_TOKEN },
      midtrans: { serverKey: e.SIMULATOR_MIDTRANS_SERVER_KEY },
      iris: { creatorKey: e.SIMULATOR_IRIS_CREATOR_KEY, approverKey: e.SIMULATOR_IRIS_APPROVER_KEY, merchantKey: e.SIMULATOR_IRIS_MERCHANT_KEY },
    },
  };
}
