// V1 settlements (spec 4.6): read-only for merchants; the platform builds them (db/settlements.ts).
// Any merchant may list: a WALLET merchant simply has none. The 403 of spec 4.6 is
// MERCHANT_INACTIVE (api/http/auth.ts); another merchant's settlement is 404 NOT_FOUND.
import { Router } from 'express';
import type { AppContext } from '../context.ts';
import { ApiError } from '../../db/errors.ts';
import { findMerchantSettlement, listMerchantSettlements } from '../../db/settlements.sql.ts';
import { pageMeta, sendData, sendPage } from '../http/envelope.ts';
import { pagination } from '../http/pagination.ts';
import { uuidParam } from '../http/wallet.ts';
import { presentSettlement } from '../../db/present/settlements.ts';
import { knownQuery } from '../http/list-filters.ts';

export function settlementRoutes(ctx: AppContext): Router {
  const router = Router();

  router.get('/v1/settlements', knownQuery('page', 'limit'), async (req, res) => {
    // Spec 8: the settlement list's example shows limit 10; the general maximum applies.
    const { page, limit } = pagination(req, { limit: 10, max: 100 });
    const [rows, total] = await listMerchantSettlements(ctx.replica.reads(), req.merchant.id, page, limit);
    sendPage(res, rows.map(presentSettlement), pageMeta(page, limit, total));
  });

  router.get('/v1/settlements/:id', async (req, res) => {
    const found = await findMerchantSettlement(ctx.pool, req.merchant.id, uuidParam(req, 'id'));
    if (!found) throw new ApiError('NOT_FOUND', 'Settlement not found');
    sendData(res, presentSettlement(found));
  });

  return router;
}
