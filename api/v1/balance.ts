// Wallet balance and its movements (spec 4.4), read from the ledger's WALLET account.
import { Router } from 'express';
import type { AppContext } from '../context.ts';
import { ApiError } from '../../db/errors.ts';
import { walletBalance } from '../../db/ledger.ts';
import { findMovement, listMovements, transferKind } from '../../db/ledger.sql.ts';
import { dayRange, oneOf, knownQuery } from '../http/list-filters.ts';
import { pageMeta, sendData, sendPage } from '../http/envelope.ts';
import { pagination } from '../http/pagination.ts';
import { requireWalletMerchant, uuidParam } from '../http/wallet.ts';
import { presentMovement } from '../../db/present/ledger.ts';

export function balanceRoutes(ctx: AppContext): Router {
  const router = Router();
  router.use(['/v1/balance', '/v1/balance-history'], requireWalletMerchant);

  router.get('/v1/balance', knownQuery(), async (req, res) => {
    sendData(res, { merchant_id: req.merchant.id, balance: await walletBalance(ctx.pool, req.merchant.id) });
  });

  router.get('/v1/balance-history', knownQuery('page', 'limit', 'type', 'date_from', 'date_to'), async (req, res) => {
    const { page, limit } = pagination(req);
    const filter = { type: oneOf(req, 'type', transferKind.options), ...dayRange(req) };
    const [rows, total] = await listMovements(ctx.replica.reads(), req.merchant.id, 'WALLET', page, limit, filter);
    sendPage(res, rows.map(presentMovement), pageMeta(page, limit, total));
  });

  router.get('/v1/balance-history/:id', async (req, res) => {
    const movement = await findMovement(ctx.pool, req.merchant.id, 'WALLET', uuidParam(req, 'id'));
    if (!movement) throw new ApiError('NOT_FOUND', 'Balance movement not found');
    sendData(res, presentMovement(movement));
  });

  return router;
}
