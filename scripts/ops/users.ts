// Team users: list a merchant's team, issue a user an API key (printed once, stored hashed),
// revoke one key. Users themselves are managed by the merchant's owner through /v1/my/users.
import { z } from 'zod';
import { getMerchant } from '../../db/merchants.ts';
import { issueUserKey, listUsers, UserNotFound } from '../../db/users.ts';
import { countLiveKeys, revokeKey } from '../../db/users.sql.ts';
import { command, OpsError } from './command.ts';

export const userList = command({
  name: 'user:list',
  summary: "List a merchant's team users with their roles and live API keys",
  usage: 'user:list --merchant ID [--json]',
  flags: { merchant: { type: 'string' } },
  input: z.object({ merchant: z.uuid('--merchant must be a merchant UUID') }),
  async run(ctx, input) {
    const pool = await ctx.pool();
    await getMerchant(pool, input.merchant);
    const [users, keys] = await Promise.all([listUsers(pool, input.merchant), countLiveKeys(pool, input.merchant)]);
    const liveKeys = new Map(keys.map((k) => [k.user_id, k.live_keys]));
    const rows = users.map((u) => ({
      id: u.id,
      full_name: u.full_name,
      email: u.email,
      role: u.role,
      live_keys: liveKeys.get(u.id) ?? 0,
      created_at: u.created_at.toISOString(),
    }));
    return {
      json: { merchant_id: input.merchant, users: rows },
      text: rows.length
        ? rows.map((u) => `${u.id}  ${u.role.padEnd(7)}  ${u.email}  (${u.full_name}; ${u.live_keys} live key${u.live_keys === 1 ? '' : 's'})`).join('\n')
        : `merchant ${input.merchant} has no team users`,
    };
  },
});

export const userIssueKey = command({
  name: 'user:issue-key',
  summary: "Issue an API key for a team user, acting with the user's role (shown only once)",
  usage: 'user:issue-key --user ID [--json]',
  flags: { user: { type: 'string' } },
  input: z.object({ user: z.uuid('--user must be a user UUID') }),
  async run(ctx, input) {
    try {
      const issued = await issueUserKey(await ctx.pool(), input.user);
      return {
        json: issued,
        text: [
          `key ${issued.key_id} issued to user ${issued.user_id} (${issued.role}, merchant ${issued.merchant_id})`,
          `api_key: ${issued.api_key}   (shown only now; stored hashed)`,
        ].join('\n'),
      };
    } catch (err) {
      if (err instanceof UserNotFound) throw new OpsError(`no current user with id ${input.user} (unknown or removed)`);
      throw err;
    }
  },
});

export const userRevokeKey = command({
  name: 'user:revoke-key',
  summary: "Revoke one team user's API key (it stops working at once)",
  usage: 'user:revoke-key --key KEY_ID [--json]',
  flags: { key: { type: 'string' } },
  input: z.object({ key: z.uuid('--key must be the key id printed by user:issue-key') }),
  async run(ctx, input) {
    const key = await revokeKey(await ctx.pool(), input.key);
    if (!key) throw new OpsError(`no API key with id ${input.key}`);
    return {
      json: { key_id: key.id, user_id: key.user_id, revoked_at: key.revoked_at?.toISOString() ?? null },
      text: `key ${key.id} of user ${key.user_id} revoked`,
    };
  },
});
