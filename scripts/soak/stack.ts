// The soak's own Kasir: a throwaway durable Postgres cluster under the soak's directory,
// migrated; the simulator registered as the default vendor (as npm start does); one WALLET
// merchant with a webhook secret, its notify_url at the soak's receiver and a float in its
// wallet; then every Procfile line as a supervised process.
//
// Settings are production defaults except where a default would make the drain wait on a
// clock the soak does not test (each is listed in docs/reliability.md): webhook retries a
// few seconds apart instead of minutes, a sent disbursement queried after 5 s instead of 30,
// and the simulator settling disbursements in 0.5 s. The job heartbeat and supervision
// interval, which decide how fast work cut off by a crash is retried, are left as shipped.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { defaultBrand } from '../../db/brands.ts';
import { adjustWallet } from '../../db/ledger.ts';
import { createMerchant } from '../../db/merchants.ts';
import { prepareDatabase } from '../../db/migrate.ts';
import { createPool } from '../../db/pool.ts';
import { createSealer, newMasterKey, newWebhookSecret } from '../../db/secrets.ts';
import { freePort } from '../lib/cluster.ts';
import { isSimulator, readProcfile, simulatorEnv } from '../lib/procfile.ts';
import { registerSimulator } from '../lib/simulator-vendor.ts';
import { startSoakPostgres, type SoakPostgres } from './postgres.ts';
import { startReceiver, type Receiver } from './receiver.ts';
import { supervise, type Supervisor } from './supervisor.ts';

/** The merchant's float: far above what a run disburses and refunds, so no request is refused for funds. */
const FLOAT = 5_000_000_000;
const READY_TIMEOUT_MS = 60_000;

export const SOAK_SETTINGS = {
  LOG_LEVEL: 'warn',
  NOTIFY_URL_ALLOWLIST: '127.0.0.1,localhost',
  DB_POOL_SIZE: '5',
  WEBHOOK_RETRY_SCHEDULE: '1,2,5,10,30',
  DISBURSEMENT_RECONCILE_DELAY_SECONDS: '5',
};
export const SIMULATOR_SETTINGS = { SIMULATOR_DISBURSE_DELAY_MS: '500' };

export interface SoakStack {
  postgres: SoakPostgres;
  supervisor: Supervisor;
  receiver: Receiver;
  databaseUrl: string;
  apiUrl: string;
  simulatorUrl: string;
  merchant: { id: string; apiKey: string; webhookSecret: string };
}

/** What has been started so far, for the caller to stop even when a later step fails. */
export type Started = Partial<Pick<SoakStack, 'postgres' | 'supervisor' | 'receiver'>>;

/** Starts the Postgres the stack runs on: the soak's own cluster unless the caller brings one (the failover drill's). */
export type PostgresStarter = (dir: string, logDir: string) => Promise<SoakPostgres>;

const soakPostgres: PostgresStarter = (dir, logDir) => startSoakPostgres(`${dir}/pg`, `${logDir}/postgres.log`);

export async function startStack(dir: string, started: Started, startPostgres: PostgresStarter = soakPostgres): Promise<SoakStack> {
  await mkdir(`${dir}/logs`, { recursive: true });
  const postgres = await startPostgres(dir, `${dir}/logs`);
  started.postgres = postgres;
  await prepareDatabase(postgres.url);

  const masterKey = newMasterKey();
  const [apiPort, simulatorPort] = [await freePort(), await freePort()];
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const simulatorUrl = `http://127.0.0.1:${simulatorPort}`;
  const simulatorSecret = randomBytes(18).toString('base64url');
  await registerSimulator(postgres.url, masterKey, simulatorUrl, simulatorSecret);

  const webhookSecret = newWebhookSecret();
  const receiver = await startReceiver(webhookSecret);
  started.receiver = receiver;
  const pool = await createPool(postgres.url, { size: 1, name: 'soak' });
  let merchant;
  try {
    const sealer = createSealer(masterKey);
    const made = await createMerchant(pool, sealer, {
      name: 'Toko Soak',
      settlementType: 'WALLET',
      brandId: (await defaultBrand(pool)).id,
      webhookSecret,
      notifyUrl: receiver.url,
    });
    await pool.transaction((tx) => adjustWallet(tx, { merchantId: made.merchant_id, adjustmentId: randomUUID(), amount: FLOAT, reason: 'soak float' }));
    merchant = { id: made.merchant_id, apiKey: made.api_key, webhookSecret };
  } finally {
    // Closed before the chaos: a pool whose server is killed under it has nothing to offer.
    await pool.end();
  }

  // Nothing of the caller's database or secrets reaches the processes: they get the soak's.
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(DATABASE_|KASIR_|METRICS_|SIMULATOR_)/.test(name)));
  const kasirEnv = {
    ...inherited,
    ...SOAK_SETTINGS,
    DATABASE_URL: postgres.url,
    KASIR_MASTER_KEY: masterKey,
    HOST: '127.0.0.1',
    PORT: String(apiPort),
    PUBLIC_BASE_URL: apiUrl,
  };
  const simEnv = {
    ...simulatorEnv(inherited),
    ...SIMULATOR_SETTINGS,
    LOG_LEVEL: 'warn',
    SIMULATOR_HOST: '127.0.0.1',
    SIMULATOR_PORT: String(simulatorPort),
    SIMULATOR_SECRET: simulatorSecret,
    // Where the simulator keeps its state across restarts, once it keeps any.
    SIMULATOR_STATE_FILE: `${dir}/simulator-state`,
  };
  const supervisor = supervise(await readProcfile(), (line) => (isSimulator(line) ? simEnv : kasirEnv), `${dir}/logs`);
  started.supervisor = supervisor;
  await supervisor.allReady(READY_TIMEOUT_MS);
  return { postgres, supervisor, receiver, databaseUrl: postgres.url, apiUrl, simulatorUrl, merchant };
}
