// Wallet endpoints (balance, history, disbursements) exist for WALLET merchants only (spec 4.3
// rule 1, 4.4): anyone else gets 403 NOT_WALLET_MERCHANT before anything else is looked at.
import type { NextFunction, Request, Response } from 'express';
import { ApiError } from '../../db/errors.ts';

export function requireWalletMerchant(req: Request, _res: Response, next: NextFunction): void {
  if (req.merchant.settlement_type !== 'WALLET') throw new ApiError('NOT_WALLET_MERCHANT');
  next();
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A path id that must be a UUID: anything else is 400 INVALID_ID. */
export function uuidParam(req: Request, name: string): string {
  const value = String(req.params[name]);
  if (!UUID.test(value)) throw new ApiError('INVALID_ID', `${name} must be a UUID`);
  return value.toLowerCase();
}
