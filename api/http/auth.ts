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
import { LEGACY_API_KEY_PREFIX, constantTimeEqual, hashApiKey } from '../../db/secrets.ts';
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

/** 64 hex characters (spec 5.1); keys an earlier release issued with the kasir_sk_ prefix stay valid. */
const API_KEY = new RegExp(`^(?:${LEGACY_API_KEY_PREFIX})?[0-9a-f]{64}$`, 'i');
const QUERY_KEY_NAMES = ['api_key', 'apikey', 'apiKey', 'key', 'x-api-key', 'X-API-Key'];

// What each refusal says: the header to send and what a key looks like. A wrong key and a key of
// another brand read the same (nothing tells a prober which keys exist).
const NO_KEY = 'Missing API key: send it in the X-API-Key header';
const BEARER = 'API keys go in the X-API-Key header, not Authorization: send X-API-Key: <key> instead of Authorization: Bearer <key>';
const MALFORMED = `X-API-Key is not an API key: expected 64 hex characters (or, for keys issued with the ${LEGACY_API_KEY_PREFIX} prefix, the prefix and 64 hex characters)`;
const UNKNOWN = 'Invalid API key: the X-API-Key header matches no active key on this domain (revoked, rotated, mistyped, or of another brand)';

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
    const key = req.get('x-api-key')?.trim();
    if (!key) throw refuse(/^bearer\s/i.test(req.get('authorization') ?? '') ? BEARER : NO_KEY);
    if (!API_KEY.test(key)) throw refuse(MALFORMED);
    const digest = hashApiKey(key.toLowerCase());
    const found = await findCredential(db, key.toLowerCase());
    if (!found || !constantTimeEqual(found.key_hash, digest)) throw refuse(UNKNOWN);
    const { user_id: userId, role, key_hash: _, mdr_bps, fee_bank, fee_ewallet, disbursement_limit, daily_disbursement_limit, review_threshold, ...merchant } = found;
    // A key belongs to one brand; used on another brand's domain it is as good as unknown.
    if (merchant.brand_id !== req.brand.id) throw refuse(UNKNOWN);
    if (merchant.status !== 'ACTIVE') throw new ApiError('MERCHANT_INACTIVE');
    throttle.perKey(digest.toString('hex'));
    req.merchant = merchant;
    req.moneySettings = { settlement_type: merchant.settlement_type, mdr_bps, fee_bank, fee_ewallet, disbursement_limit, daily_disbursement_limit, review_threshold };
    req.role = role;
    req.userId = userId;
    next();
  };
}
