// X-API-Key authentication (spec 5.1). The key is looked up by its SHA-256 digest (a unique
// index, so the lookup time says nothing about the key) and the digest is compared again in
// constant time. A key sent in the query string is refused outright: URLs end up in logs.
//
// A key is either the merchant's own (it acts as owner) or one issued to a team user, which
// acts for the user's merchant with the user's role as it is now: the role and the user's
// removal are read with the key on every request. What a role may do is api/http/roles.ts.
import type { NextFunction, Request, Response } from 'express';
import type { Db } from '../../db/pool.ts';
import type { AuthThrottle } from './auth-throttle.ts';
import { constantTimeEqual, hashApiKey } from '../../db/secrets.ts';
import { ApiError } from '../../db/errors.ts';
import type { MerchantMoneySettings } from '../../db/merchants.ts';
import { findCredential, type Role } from '../../db/users.sql.ts';

declare module 'express-serve-static-core' {
  interface Request {
    /** The role the key acts with: owner for the merchant's own key. */
    role: Role;
    /** The team user a key was issued to; null for the merchant's own key. */
    userId: string | null;
    /** The merchant's fees and limits, read with the key (as they were at this request's start). */
    moneySettings: MerchantMoneySettings;
  }
}

const API_KEY = /^[0-9a-fA-F]{64}$/;
const QUERY_KEY_NAMES = ['api_key', 'apikey', 'apiKey', 'key', 'x-api-key', 'X-API-Key'];

export function requireApiKey(db: Db, throttle: AuthThrottle) {
  return async (req: Request, _res: Response, next: NextFunction) => {
    // A valid key is never throttled; a wrong one from an address that keeps failing is
    // answered 429 instead of 401 (api/http/auth-throttle.ts). A CORS preflight carries no
    // key by design: it is refused without counting as a failure.
    const refuse = (message?: string) => {
      if (req.method !== 'OPTIONS') throttle.failed(req, 'api_key');
      return new ApiError('UNAUTHORIZED', message);
    };
    const query = req.query as Record<string, unknown>;
    if (QUERY_KEY_NAMES.some((name) => name in query)) throw refuse('API keys are accepted only in the X-API-Key header');
    const key = req.get('x-api-key');
    if (!key || !API_KEY.test(key)) throw refuse();
    const digest = hashApiKey(key.toLowerCase());
    const found = await findCredential(db, key.toLowerCase());
    if (!found || !constantTimeEqual(found.key_hash, digest)) throw refuse();
    const { user_id: userId, role, key_hash: _, mdr_bps, fee_bank, fee_ewallet, disbursement_limit, daily_disbursement_limit, review_threshold, ...merchant } = found;
    // A key belongs to one brand; used on another brand's domain it is as good as unknown.
    if (merchant.brand_id !== req.brand.id) throw refuse();
    if (merchant.status !== 'ACTIVE') throw new ApiError('MERCHANT_INACTIVE');
    throttle.perKey(digest.toString('hex'));
    req.merchant = merchant;
    req.moneySettings = { settlement_type: merchant.settlement_type, mdr_bps, fee_bank, fee_ewallet, disbursement_limit, daily_disbursement_limit, review_threshold };
    req.role = role;
    req.userId = userId;
    next();
  };
}
