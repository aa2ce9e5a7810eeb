// One database per test file, cloned from the template that scripts/test.ts migrated:
// CREATE DATABASE ... TEMPLATE copies files, far faster than migrating each time.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { createPool } from '../../db/pool.ts';
import { startBoss } from '../../db/queue.ts';
import { createSealer, newMasterKey } from '../../db/secrets.ts';
import { makeMerchant } from './factories.ts';

interface Teardown {
  teardown(fn: () => unknown): void;
}

function adminUrl(): string {
  const url = process.env.KASIR_TEST_ADMIN_URL;
  if (!url) throw new Error('KASIR_TEST_ADMIN_URL is unset: run tests through `npm test`');
  return url;
}

export function urlFor(database: string): string {
  const url = new URL(adminUrl());
  url.pathname = `/${database}`;
  return url.toString();
}

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl() });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Creates an empty (unmigrated) database; for migration tests. */
export async function emptyDatabase(t: Teardown): Promise<string> {
  const name = `kasir_t_${randomBytes(6).toString('hex')}`;
  await admin((c) => c.query(`create database "${name}"`));
  t.teardown(() => admin((c) => c.query(`drop database if exists "${name}" with (force)`)));
  return urlFor(name);
}

/** Creates a migrated database for one test file and drops it when the file ends. */
export async function testDatabase(t: Teardown): Promise<string> {
  const template = process.env.KASIR_TEST_TEMPLATE;
  if (!template) throw new Error('KASIR_TEST_TEMPLATE is unset: run tests through `npm test`');
  const name = `kasir_t_${randomBytes(6).toString('hex')}`;
  // Two files cloning at the same instant collide on the template's lock: retry briefly.
  for (let attempt = 0; ; attempt++) {
    try {
      await admin((c) => c.query(`create database "${name}" template "${template}"`));
      break;
    } catch (err) {
      if (attempt >= 50 || !/being accessed by other users/.test((err as Error).message)) throw err;
      await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 80));
    }
  }
  t.teardown(() => admin((c) => c.query(`drop database if exists "${name}" with (force)`)));
  return urlFor(name);
}

/**
 * A fresh test database with what a test of Kasir's statements around pg-boss needs: the app's
 * pool, a pg-boss that sends (its queues created), a plain client for reading the job table, and
 * a merchant. All closed at teardown.
 */
export async function queueTestbed(t: Teardown) {
  const url = await testDatabase(t);
  const pool = await createPool(url, { size: 2, name: 'test' });
  t.teardown(() => pool.end());
  const boss: PgBoss = await startBoss(url, { role: 'sender', preparedStatements: false, poolSize: 2 });
  t.teardown(() => boss.stop({ graceful: false }));
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  t.teardown(() => client.end());
  const sealer = createSealer(newMasterKey());
  const merchant = await makeMerchant({ pool, sealer });
  return { url, pool, boss, client, sealer, merchantId: merchant.merchant_id };
}
