// Bank and e-wallet master data (tables banks, ewallets): the destinations a disbursement may
// pay out to. Short codes are stored uppercase (a CHECK says so) and every lookup upper-cases
// its argument, so `bca` finds BCA through the unique index. Every write to either table
// notifies MASTER_DATA_CHANNEL from a statement trigger (migration 005) in the writing
// transaction, so API processes can cache the enabled lists and drop them when a change commits.
import { z } from 'zod';
import { cachedValue, type CachedValue } from './cache.ts';
import { sql, type Db } from './pool.ts';

export const MASTER_DATA_CHANNEL = 'kasir_master_data';
/** How long readers may keep the lists (spec 8: the e-wallet list is cached for 1 hour). */
export const MASTER_DATA_CACHE_SECONDS = 3600;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const bankRow = z.object({
  id: z.string(),
  short_code: z.string(),
  name: z.string(),
  /** The 3-digit Bank Indonesia clearing code (sandi bank), e.g. '014' for BCA. */
  bi_code: z.string(),
  is_enabled: z.boolean(),
  sort_order: z.number(),
});
export type BankRow = z.infer<typeof bankRow>;

const ewalletRow = z.object({
  id: z.string(),
  name: z.string(),
  short_code: z.string(),
  /** A path on Kasir's public base URL ('/assets/...') or an absolute URL. */
  logo_url: z.string(),
  is_enabled: z.boolean(),
  sort_order: z.number(),
});
export type EwalletRow = z.infer<typeof ewalletRow>;

const bankColumns = sql.fragment`id, short_code, name, bi_code, is_enabled, sort_order`;
const ewalletColumns = sql.fragment`id, name, short_code, logo_url, is_enabled, sort_order`;

/** Enabled or not: callers decide between BANK_NOT_FOUND (null) and BANK_DISABLED. */
export function findBankByShortCode(db: Db, shortCode: string): Promise<BankRow | null> {
  return db.maybeOne(sql.type(bankRow)`
    select ${bankColumns} from banks where short_code = upper(${shortCode})`);
}

/** Null for an unknown id, or for a string that is not a UUID at all. */
export async function findBankById(db: Db, id: string): Promise<BankRow | null> {
  if (!UUID.test(id)) return null;
  return db.maybeOne(sql.type(bankRow)`select ${bankColumns} from banks where id = ${id}`);
}

export function listEnabledBanks(db: Db): Promise<readonly BankRow[]> {
  return db.any(sql.type(bankRow)`
    select ${bankColumns} from banks where is_enabled order by sort_order, short_code`);
}

/** The bank as changed, or null when no bank has the short code. */
export function setBankEnabled(db: Db, shortCode: string, enabled: boolean): Promise<BankRow | null> {
  return db.maybeOne(sql.type(bankRow)`
    update banks set is_enabled = ${enabled}, updated_at = now()
    where short_code = upper(${shortCode})
    returning ${bankColumns}`);
}

export function findEwalletByShortCode(db: Db, shortCode: string): Promise<EwalletRow | null> {
  return db.maybeOne(sql.type(ewalletRow)`
    select ${ewalletColumns} from ewallets where short_code = upper(${shortCode})`);
}

export function listEnabledEwallets(db: Db): Promise<readonly EwalletRow[]> {
  return db.any(sql.type(ewalletRow)`
    select ${ewalletColumns} from ewallets where is_enabled order by sort_order, short_code`);
}

/** The e-wallet as changed, or null when no e-wallet has the short code. */
export function setEwalletEnabled(db: Db, shortCode: string, enabled: boolean): Promise<EwalletRow | null> {
  return db.maybeOne(sql.type(ewalletRow)`
    update ewallets set is_enabled = ${enabled}, updated_at = now()
    where short_code = upper(${shortCode})
    returning ${ewalletColumns}`);
}

/** Enabled banks and e-wallets cached in the process; the owner clears it on MASTER_DATA_CHANNEL. */
export interface MasterDataCache {
  banks: CachedValue<readonly BankRow[]>;
  ewallets: CachedValue<readonly EwalletRow[]>;
  clear(): void;
}

export function createMasterDataCache(db: Db): MasterDataCache {
  const ttlMs = MASTER_DATA_CACHE_SECONDS * 1000;
  const banks = cachedValue(ttlMs, () => listEnabledBanks(db));
  const ewallets = cachedValue(ttlMs, () => listEnabledEwallets(db));
  return {
    banks,
    ewallets,
    clear() {
      banks.clear();
      ewallets.clear();
    },
  };
}
