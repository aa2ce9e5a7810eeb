// One function per statement on the team aggregate (tables merchant_users and api_keys).
import { z } from 'zod';
import { merchantColumns, merchantMoneySettings, merchantRow } from './merchants.ts';
import { sql, type Db } from './pool.ts';
import { hashApiKey } from './secrets.ts';

export const role = z.enum(['owner', 'finance', 'ops', 'viewer']);
export type Role = z.infer<typeof role>;

export const userRow = z.object({
  id: z.string(),
  merchant_id: z.string(),
  full_name: z.string(),
  email: z.string(),
  phone_number: z.string().nullable(),
  role,
  created_at: z.date(),
  updated_at: z.date(),
  removed_at: z.date().nullable(),
});
export type UserRow = z.infer<typeof userRow>;

const columns = sql.fragment`id, merchant_id, full_name, email, phone_number, role, created_at, updated_at, removed_at`;

export interface NewUser {
  merchantId: string;
  fullName: string;
  email: string;
  /** Already normalised to 62… by the caller. */
  phoneNumber: string | null;
  role: Role;
}

/** The new user, or null when a current user of the merchant has this email (any letter case). */
export function insertUser(db: Db, u: NewUser) {
  return db.maybeOne(sql.type(userRow)`
    insert into merchant_users (merchant_id, full_name, email, phone_number, role)
    values (${u.merchantId}, ${u.fullName}, ${u.email}, ${u.phoneNumber}, ${u.role})
    on conflict (merchant_id, lower(email)) where removed_at is null do nothing
    returning ${columns}`);
}

/** The merchant's current users, oldest first. */
export function listMerchantUsers(db: Db, merchantId: string) {
  return db.any(sql.type(userRow)`
    select ${columns} from merchant_users
    where merchant_id = ${merchantId} and removed_at is null
    order by created_at, id`);
}

export function findUser(db: Db, id: string) {
  return db.maybeOne(sql.type(userRow)`select ${columns} from merchant_users where id = ${id}`);
}

const lockTeamRow = z.object({ id: z.string(), role });

/**
 * Locks every current user of the merchant, in id order so two team changes of one merchant
 * queue up instead of deadlocking. The last-owner rule is checked on these locked rows: two
 * concurrent demotions of the last two owners cannot both see the other still an owner.
 * A team is tens of rows; new rows inserted meanwhile can only add owners, never remove one.
 */
export function lockTeam(db: Db, merchantId: string) {
  return db.any(sql.type(lockTeamRow)`
    select id, role from merchant_users
    where merchant_id = ${merchantId} and removed_at is null
    order by id
    for update`);
}

export function setUserRole(db: Db, id: string, newRole: Role) {
  return db.one(sql.type(userRow)`
    update merchant_users set role = ${newRole}, updated_at = now()
    where id = ${id}
    returning ${columns}`);
}

export function markUserRemoved(db: Db, id: string) {
  return db.query(sql.unsafe`
    update merchant_users set removed_at = now(), updated_at = now()
    where id = ${id} and removed_at is null`);
}

/** Revokes the user's live keys; returns how many. */
export async function revokeUserKeys(db: Db, userId: string): Promise<number> {
  const result = await db.query(sql.unsafe`
    update api_keys set revoked_at = now() where user_id = ${userId} and revoked_at is null`);
  return result.rowCount;
}

export const apiKeyRow = z.object({
  id: z.string(),
  merchant_id: z.string(),
  user_id: z.string(),
  created_at: z.date(),
  revoked_at: z.date().nullable(),
});
export type ApiKeyRow = z.infer<typeof apiKeyRow>;

/** Stores the digest of a new key for a current user; null when the user is unknown or removed. */
export function insertUserKey(db: Db, userId: string, apiKey: string) {
  return db.maybeOne(sql.type(apiKeyRow)`
    insert into api_keys (merchant_id, user_id, key_hash)
    select merchant_id, id, ${sql.binary(hashApiKey(apiKey))} from merchant_users
    where id = ${userId} and removed_at is null
    returning id, merchant_id, user_id, created_at, revoked_at`);
}

export function revokeKey(db: Db, keyId: string) {
  return db.maybeOne(sql.type(apiKeyRow)`
    update api_keys set revoked_at = coalesce(revoked_at, now())
    where id = ${keyId}
    returning id, merchant_id, user_id, created_at, revoked_at`);
}

const countLiveKeysRow = z.object({ user_id: z.string(), live_keys: z.number() });

/** Live keys per current user of the merchant (for the operator's listing). */
export function countLiveKeys(db: Db, merchantId: string) {
  return db.any(sql.type(countLiveKeysRow)`
    select user_id, count(*)::int as live_keys from api_keys
    where merchant_id = ${merchantId} and revoked_at is null
    group by user_id`);
}

export const credentialRow = merchantRow.extend({
  user_id: z.string().nullable(),
  role,
  key_hash: z.instanceof(Buffer),
  // The money settings come with the key: a disbursement needs no second read of the merchant.
  ...merchantMoneySettings.omit({ settlement_type: true }).shape,
});
export type CredentialRow = z.infer<typeof credentialRow>;

/**
 * Whoever holds this key, in one round trip: the merchant itself (acting as owner; its current
 * key, or the key it replaced while that rotation's grace lasts) or a current team user with a
 * live key, together with the merchant the key acts for. Keys are 256 random bits, so one
 * digest never names two of them.
 */
export function findCredential(db: Db, apiKey: string) {
  const digest = sql.binary(hashApiKey(apiKey));
  return db.maybeOne(sql.type(credentialRow)`
    select ${merchantColumns}, c.user_id, c.role, c.key_hash,
           mdr_bps, fee_bank, fee_ewallet, disbursement_limit, daily_disbursement_limit, review_threshold
    from (
      select id as merchant_id, null::uuid as user_id, 'owner'::text as role, api_key_hash as key_hash
      from merchants where api_key_hash = ${digest}
      union all
      select id, null::uuid, 'owner'::text, previous_api_key_hash
      from merchants where previous_api_key_hash = ${digest} and previous_api_key_expires_at > now()
      union all
      select u.merchant_id, u.id, u.role, k.key_hash
      from api_keys k join merchant_users u on u.id = k.user_id
      where k.key_hash = ${digest} and k.revoked_at is null and u.removed_at is null
    ) c
    join merchants on merchants.id = c.merchant_id`);
}
