// Test configuration: durations shortened so timing rules run in seconds.
import { parseConfig, type Config } from '../../db/config.ts';

export const TEST_MASTER_KEY = '0f'.repeat(32);

export function testEnv(databaseUrl: string, overrides: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    KASIR_MASTER_KEY: TEST_MASTER_KEY,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    PORT: '0',
    DB_POOL_SIZE: '5',
    NOTIFY_URL_ALLOWLIST: '127.0.0.1,localhost',
    ORDER_CREATE_DEADLINE_MS: '5000',
    ORDER_RECONCILE_DELAY_SECONDS: '1',
    EXPIRY_SWEEP_INTERVAL_MS: '300',
    WEBHOOK_TIMEOUT_MS: '2000',
    WEBHOOK_RETRY_SCHEDULE: '1,1,2',
    VENDOR_TIMEOUT_MS: '1500',
    ORDER_CREATE_JOB_EXPIRE_SECONDS: '5',
    QUEUE_MONITOR_INTERVAL_SECONDS: '1',
    // Tests send many wrong keys and signatures from 127.0.0.1 to one API process; the throttle
    // has its own test (test/api/auth-throttle.test.ts) with its own limits.
    AUTH_FAILURE_LIMIT: '1000000',
    ...overrides,
  };
}

export function testConfig(databaseUrl: string, overrides: Record<string, string> = {}): Config {
  return parseConfig(testEnv(databaseUrl, overrides));
}
