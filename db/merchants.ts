// Merchants and their credentials. The API key leaves Kasir exactly once, in the result of
// createMerchant / rotateApiKey; afterwards only its SHA-256 digest exists. Webhook and
// legacy client secrets are sealed with the master key, bound to the merchant's row
// (db/secrets.ts): the id is chosen here, before the insert, so the first seal is bound too.
import { randomBytes, randomUUID } from 'node:crypto';
import { z } from 'zod';
import { sql, type Db } from './pool.ts';
import { idRow } from './row-shapes.ts';
import {
  hashApiKey,
  newApiKey,
  newLegacyClientSecret,
  type Sealer,
  type SealedPlace,
} from './secrets.ts';

export const merchantStatus = z.enum(['ACTIVE', 'SUSPENDED', 'DISABLED']);
export const settlementType = z.enum(['WALLET', 'MANUAL']);
export type MerchantStatus = z.infer<typeof merchantStatus>;

export const merchantRow = z.object({
  id: z.string(),
  brand_id: z.string(),
  name: z.string(),
  status: merchantStatus,
  settlement_type: settlementType,
  api_key_hash: z.instanceof(Buffer),
  webhook_secret_enc: z.instanceof(Buffer).nullable(),
  notify_url: z.string().nullable(),
  legacy_client_id: z.string(),
  legacy_client_secret_enc: z.instanceof(Buffer),
  legacy_public_key: z.string().nullable(),
});
export type MerchantRow = z.infer<typeof merchantRow>;

const columns = sql.fragment`
  id, brand_id, name, status, settlement_type, api_key_hash, webhook_secret_enc, notify_url,
  legacy_client_id, legacy_client_secret_enc, legacy_public_key`;
/** For queries that read a merchant together with something else (db/users.sql.ts findCredential). */
export const merchantColumns = columns;

export class MerchantNotFound extends Error {
  constructor(id: string) {
    super(`no merchant with id ${id}`);
  }
}

export interface NewMerchant {
  name: string;
  settlementType: z.infer<typeof settlementType>;
  brandId: string;
  webhookSecret: string | null;
  notifyUrl: string | null;
}

export interface ProvisionedMerchant {
  merchant_id: string;
  api_key: string;
  webhook_secret: string | null;
  legacy_client_id: string;
  legacy_client_secret: string;
}

export const webhookSecretPlace = (id: string): SealedPlace => ({ table: 'merchants', column: 'webhook_secret_enc', rowId: id });
export const legacyClientSecretPlace = (id: string): SealedPlace => ({ table: 'merchants', column: 'legacy_client_secret_enc', rowId: id });

export async function createMerchant(db: Db, sealer: Sealer, input: NewMerchant): Promise<ProvisionedMerchant> {
  const apiKey = newApiKey();
  const legacyClientId = `KSR${randomBytes(8).toString('hex').toUpperCase()}`;
  const legacyClientSecret = newLegacyClientSecret();
  const newId = randomUUID();
  const id = await db.oneFirst(sql.type(idRow)`
    insert into merchants (id, brand_id, name, settlement_type, api_key_hash, webhook_secret_enc, notify_url,
                           legacy_client_id, legacy_client_secret_enc)
    values (${newId}, ${input.brandId}, ${input.name}, ${input.settlementType}, ${sql.binary(hashApiKey(apiKey))},
            ${input.webhookSecret === null ? null : sql.binary(sealer.seal(input.webhookSecret, webhookSecretPlace(newId)))},
            ${input.notifyUrl}, ${legacyClientId}, ${sql.binary(sealer.seal(legacyClientSecret, legacyClientSecretPlace(newId)))})
    returning id`);
  return {
    merchant_id: id,
    api_key: apiKey,
    webhook_secret: input.webhookSecret,
    legacy_client_id: legacyClientId,
    legacy_client_secret: legacyClientSecret,
  };
}

export async function findMerchantByLegacyClientId(db: Db, clientId: string): Promise<MerchantRow | null> {
  return db.maybeOne(sql.type(merchantRow)`
    select ${columns} from merchants where legacy_client_id = ${clientId}`);
}

export async function getMerchant(db: Db, id: string): Promise<MerchantRow> {
  const row = await db.maybeOne(sql.type(merchantRow)`select ${columns} from merchants where id = ${id}`);
  if (!row) throw new MerchantNotFound(id);
  return row;
}

export async function setMerchantStatus(db: Db, id: string, status: MerchantStatus): Promise<void> {
  const updated = await db.maybeOneFirst(sql.type(idRow)`
    update merchants set status = ${status}, updated_at = now() where id = ${id} returning id`);
  if (!updated) throw new MerchantNotFound(id);
}

/** The merchant's default webhook URL (orders and disbursements without their own); null: none. */
export async function setNotifyUrl(db: Db, id: string, url: string | null): Promise<void> {
  const updated = await db.maybeOneFirst(sql.type(idRow)`
    update merchants set notify_url = ${url}, updated_at = now() where id = ${id} returning id`);
  if (!updated) throw new MerchantNotFound(id);
}

const rotateApiKeyRow = z.object({ previous_api_key_expires_at: z.date().nullable() });

/**
 * Replaces the API key and returns the new one. With graceMinutes > 0 the key being replaced
 * keeps working until then (findCredential reads previous_api_key_hash), so a merchant can
 * deploy the new key without an outage; with 0 it stops at once. One previous key at most:
 * rotating again during a grace ends the older key's grace at once.
 */
export async function rotateApiKey(db: Db, id: string, graceMinutes = 0): Promise<{ apiKey: string; previousValidUntil: Date | null }> {
  const apiKey = newApiKey();
  const updated = await db.maybeOne(sql.type(rotateApiKeyRow)`
    update merchants
    set previous_api_key_hash = case when ${graceMinutes} > 0 then api_key_hash end,
        previous_api_key_expires_at = case when ${graceMinutes} > 0 then now() + make_interval(mins => ${graceMinutes}) end,
        api_key_hash = ${sql.binary(hashApiKey(apiKey))}, updated_at = now()
    where id = ${id}
    returning previous_api_key_expires_at`);
  if (!updated) throw new MerchantNotFound(id);
  return { apiKey, previousValidUntil: updated.previous_api_key_expires_at };
}

/** Replaces the legacy client secret; the old one stops working at once. Returns the new secret. */
export async function rotateLegacyClientSecret(db: Db, sealer: Sealer, id: string): Promise<string> {
  const secret = newLegacyClientSecret();
  const updated = await db.maybeOneFirst(sql.type(idRow)`
    update merchants
    set legacy_client_secret_enc = ${sql.binary(sealer.seal(secret, legacyClientSecretPlace(id)))}, updated_at = now()
    where id = ${id} returning id`);
  if (!updated) throw new MerchantNotFound(id);
  return secret;
}

export async function setWebhookSecret(db: Db, sealer: Sealer, id: string, secret: string | null): Promise<void> {
  const updated = await db.maybeOneFirst(sql.type(idRow)`
    update merchants
    set webhook_secret_enc = ${secret === null ? null : sql.binary(sealer.seal(secret, webhookSecretPlace(id)))}, updated_at = now()
    where id = ${id} returning id`);
  if (!updated) throw new MerchantNotFound(id);
}

export async function setLegacyPublicKey(db: Db, id: string, pem: string): Promise<void> {
  const updated = await db.maybeOneFirst(sql.type(idRow)`
    update merchants set legacy_public_key = ${pem}, updated_at = now() where id = ${id} returning id`);
  if (!updated) throw new MerchantNotFound(id);
}

export function webhookSecretOf(sealer: Sealer, merchant: Pick<MerchantRow, 'id' | 'webhook_secret_enc'>): string | null {
  return merchant.webhook_secret_enc ? sealer.open(merchant.webhook_secret_enc, webhookSecretPlace(merchant.id)) : null;
}

export function legacyClientSecretOf(sealer: Sealer, merchant: Pick<MerchantRow, 'id' | 'legacy_client_secret_enc'>): string {
  return sealer.open(merchant.legacy_client_secret_enc, legacyClientSecretPlace(merchant.id));
}

export const merchantMoneySettings = z.object({
  settlement_type: settlementType,
  mdr_bps: z.number(),
  fee_bank: z.number(),
  fee_ewallet: z.number(),
  disbursement_limit: z.number(),
  daily_disbursement_limit: z.number(),
  review_threshold: z.number().nullable(),
});
export type MerchantMoneySettings = z.infer<typeof merchantMoneySettings>;

const moneyColumns = sql.fragment`
  settlement_type, mdr_bps, fee_bank, fee_ewallet, disbursement_limit, daily_disbursement_limit, review_threshold`;

/** MDR, disbursement fees and limits (defaults in DESIGN: 70 bps, 2,500 / 1,000, 100M / 500M). */
export async function getMoneySettings(db: Db, id: string): Promise<MerchantMoneySettings> {
  const row = await db.maybeOne(sql.type(merchantMoneySettings)`select ${moneyColumns} from merchants where id = ${id}`);
  if (!row) throw new MerchantNotFound(id);
  return row;
}

/** Changes the given settings only; `review_threshold: null` turns review off. */
export async function setMoneySettings(db: Db, id: string, s: Partial<Omit<MerchantMoneySettings, 'settlement_type'>>): Promise<MerchantMoneySettings> {
  const keep = <K extends keyof typeof s>(key: K) => (s[key] === undefined ? sql.identifier([key]) : sql.fragment`${s[key] as number | null}`);
  const row = await db.maybeOne(sql.type(merchantMoneySettings)`
    update merchants
    set mdr_bps = ${keep('mdr_bps')}, fee_bank = ${keep('fee_bank')}, fee_ewallet = ${keep('fee_ewallet')},
        disbursement_limit = ${keep('disbursement_limit')}, daily_disbursement_limit = ${keep('daily_disbursement_limit')},
        review_threshold = ${keep('review_threshold')}, updated_at = now()
    where id = ${id}
    returning ${moneyColumns}`);
  if (!row) throw new MerchantNotFound(id);
  return row;
}

export const settlementAccount = z.object({ bank_id: z.string(), account_number: z.string(), account_name: z.string() });
export type SettlementAccount = z.infer<typeof settlementAccount>;

const getSettlementAccountRow = z.object({ bank_id: z.string().nullable(), account_number: z.string().nullable(), account_name: z.string().nullable() });

/** Where a MANUAL merchant's settlements are paid; null until an operator sets it. */
export async function getSettlementAccount(db: Db, id: string): Promise<SettlementAccount | null> {
  const row = await db.maybeOne(sql.type(getSettlementAccountRow)`
    select settlement_bank_id as bank_id, settlement_account_number as account_number, settlement_account_name as account_name
    from merchants where id = ${id}`);
  if (!row) throw new MerchantNotFound(id);
  // A CHECK keeps the three columns set or unset together.
  return row.bank_id === null ? null : (row as SettlementAccount);
}

/** Sets the bank account settlements are paid to; the next settlement built uses it. */
export async function setSettlementAccount(db: Db, id: string, account: { bankId: string; accountNumber: string; accountName: string }): Promise<void> {
  const updated = await db.maybeOneFirst(sql.type(idRow)`
    update merchants
    set settlement_bank_id = ${account.bankId}, settlement_account_number = ${account.accountNumber},
        settlement_account_name = ${account.accountName}, updated_at = now()
    where id = ${id} returning id`);
  if (!updated) throw new MerchantNotFound(id);
}
