// The team aggregate: a merchant's users, their roles, and the API keys an operator issues them.
//
// Invariants and why they hold:
// - An email names one current user per merchant, whatever its letter case: the partial unique
//   index merchant_users_merchant_email_key decides, and an insert that meets it is DUPLICATE_EMAIL.
// - A team with an owner keeps one: every role change and removal locks the merchant's current
//   users (lockTeam) and checks the rule on the locked rows, so of two concurrent demotions of
//   the last two owners the second sees the first committed and is refused LAST_OWNER. A team
//   may start without owners (the merchant's own key acts as owner); the rule keeps the last
//   one once there is one.
// - A removed user's keys stop working at once: the removal revokes them in its transaction,
//   and authentication (findCredential) also requires the user not removed.
// - Key material leaves Kasir once, in issueUserKey's result; only its SHA-256 digest is stored.
import { ApiError } from './errors.ts';
import type { Db, Pool } from './pool.ts';
import { newApiKey } from './secrets.ts';
import {
  findUser,
  insertUser,
  insertUserKey,
  listMerchantUsers,
  lockTeam,
  markUserRemoved,
  revokeUserKeys,
  setUserRole,
  type NewUser,
  type Role,
  type UserRow,
} from './users.sql.ts';

export { role, type Role, type UserRow } from './users.sql.ts';

export function listUsers(pool: Pool, merchantId: string): Promise<readonly UserRow[]> {
  return listMerchantUsers(pool, merchantId);
}

export async function createUser(pool: Db, u: NewUser): Promise<UserRow> {
  const user = await insertUser(pool, u);
  if (!user) throw new ApiError('DUPLICATE_EMAIL', `email: ${u.email} is already a user of this merchant`);
  return user;
}

export async function changeRole(pool: Pool, merchantId: string, userId: string, newRole: Role): Promise<UserRow> {
  return pool.transaction(async (tx) => {
    const team = await lockTeam(tx, merchantId);
    const target = team.find((u) => u.id === userId);
    if (!target) throw new ApiError('USER_NOT_FOUND');
    if (newRole !== 'owner') refuseLastOwner(team, target);
    return setUserRole(tx, userId, newRole);
  });
}

/** Removes the user and revokes its keys; returns how many keys were revoked. */
export async function removeUser(pool: Pool, merchantId: string, userId: string): Promise<{ revokedKeys: number }> {
  return pool.transaction(async (tx) => {
    const team = await lockTeam(tx, merchantId);
    const target = team.find((u) => u.id === userId);
    if (!target) throw new ApiError('USER_NOT_FOUND');
    refuseLastOwner(team, target);
    await markUserRemoved(tx, userId);
    return { revokedKeys: await revokeUserKeys(tx, userId) };
  });
}

function refuseLastOwner(team: readonly { id: string; role: Role }[], target: { id: string; role: Role }): void {
  if (target.role === 'owner' && !team.some((u) => u.role === 'owner' && u.id !== target.id)) {
    throw new ApiError('LAST_OWNER');
  }
}

export class UserNotFound extends Error {
  constructor(id: string) {
    super(`no current user with id ${id}`);
  }
}

/** A new API key for a current team user (operator only): returned once, stored as its digest. */
export async function issueUserKey(pool: Pool, userId: string) {
  const apiKey = newApiKey();
  const key = await insertUserKey(pool, userId, apiKey);
  if (!key) throw new UserNotFound(userId);
  const user = (await findUser(pool, userId)) as UserRow;
  return { key_id: key.id, user_id: user.id, merchant_id: user.merchant_id, role: user.role, api_key: apiKey };
}
