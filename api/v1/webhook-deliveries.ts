// A merchant's own webhook deliveries: list them (filters status and event), read one with its
// attempts, and ask for one to be sent again (same body, same webhook-id, a new attempt now),
// as an operator's `ops webhooks:resend` does.
import { Router, type Request } from 'express';
import { z } from 'zod';
import type { AppContext } from '../context.ts';
import { ApiError } from '../../db/errors.ts';
import { sendJob } from '../../db/queue.ts';
import { findMerchantDelivery, listAttempts, listMerchantDeliveries, reopenDelivery } from '../../db/webhooks.ts';
import { presentDelivery } from '../../db/present/webhook-deliveries.ts';
import { pageMeta, sendData, sendPage } from '../http/envelope.ts';
import { pagination } from '../http/pagination.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const listQuery = z.object({
  status: z.enum(['PENDING', 'DELIVERED', 'FAILED'], 'must be PENDING, DELIVERED or FAILED').optional(),
  event: z.string().regex(/^[a-z_]+\.[a-z_]+$/, 'must be an event name such as order.paid').max(64).optional(),
});

async function merchantDelivery(ctx: AppContext, req: Request) {
  const id = String(req.params.id);
  if (!UUID.test(id)) throw new ApiError('INVALID_ID');
  const found = await findMerchantDelivery(ctx.pool, req.merchant.id, id.toLowerCase());
  if (!found) throw new ApiError('NOT_FOUND', 'Webhook delivery not found');
  return found;
}

export function webhookDeliveryRoutes(ctx: AppContext): Router {
  const router = Router();

  router.get('/v1/webhook-deliveries', async (req, res) => {
    const { page, limit } = pagination(req);
    const parsed = listQuery.safeParse({ status: req.query.status, event: req.query.event });
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ApiError('INVALID_BODY', `${issue.path.join('.')}: ${issue.message}`);
    }
    const [rows, total] = await listMerchantDeliveries(ctx.pool, req.merchant.id, parsed.data, page, limit);
    sendPage(res, rows.map((d) => presentDelivery(d)), pageMeta(page, limit, total));
  });

  router.get('/v1/webhook-deliveries/:id', async (req, res) => {
    const delivery = await merchantDelivery(ctx, req);
    sendData(res, presentDelivery(delivery, await listAttempts(ctx.pool, delivery.id)));
  });

  router.post('/v1/webhook-deliveries/:id/resend', async (req, res) => {
    const delivery = await merchantDelivery(ctx, req);
    await reopenDelivery(ctx.pool, delivery.id);
    await sendJob(ctx.boss, 'webhook-deliver', { delivery_id: delivery.id });
    const reopened = await findMerchantDelivery(ctx.pool, req.merchant.id, delivery.id);
    sendData(res, presentDelivery(reopened!), 202);
  });

  return router;
}
