// A merchant's own webhook deliveries: list them (filters status and event), read one with its
// attempts, and ask for one to be sent again (same body, same webhook-id, a new attempt now),
// as an operator's `ops webhooks:resend` does. A merchant can also send itself a sample of any
// catalogued event, as `ops webhooks:trigger` does: through the real outbox and worker, signed,
// retried and listed like any delivery, marked as a sample, and at most SAMPLES_PER_MINUTE a
// minute per merchant (the outbox is shared by every merchant).
import { Router, type Request } from 'express';
import { z } from 'zod';
import type { AppContext } from '../context.ts';
import { ApiError } from '../../db/errors.ts';
import { checkNotifyUrl } from '../../db/notify-url.ts';
import { enqueueWebhooks, findMerchantDelivery, listAttempts, listMerchantDeliveries, recentSamples, resendDelivery } from '../../db/webhooks.ts';
import { presentDelivery } from '../../db/present/webhook-deliveries.ts';
import { webhooksRetainedSince } from '../../db/retention.ts';
import { sentSampleBody, webhookEvent, webhookEvents } from '../openapi/webhook-events.ts';
import { pageMeta, sendData, sendPage } from '../http/envelope.ts';
import { pagination } from '../http/pagination.ts';
import { notifyUrlField, parseBody } from '../http/validate.ts';
import { knownQuery } from '../http/list-filters.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const listQuery = z.object({
  status: z.enum(['PENDING', 'DELIVERED', 'FAILED'], 'must be PENDING, DELIVERED or FAILED').optional(),
  event: z.string().regex(/^[a-z_]+\.[a-z_]+$/, 'must be an event name such as order.paid').max(64).optional(),
});

/** Samples one merchant may send itself per minute. */
export const SAMPLES_PER_MINUTE = 10;

export const sampleRequest = z.strictObject({
  event: z.enum(webhookEvents.map((e) => e.name) as [string, ...string[]]),
  notify_url: notifyUrlField().nullish(),
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

  router.get('/v1/webhook-deliveries', knownQuery('page', 'limit', 'status', 'event'), async (req, res) => {
    const { page, limit } = pagination(req);
    const parsed = listQuery.safeParse({ status: req.query.status, event: req.query.event });
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ApiError('INVALID_BODY', `${issue.path.join('.')}: ${issue.message}`);
    }
    const [rows, total] = await listMerchantDeliveries(ctx.pool, req.merchant.id, parsed.data, page, limit);
    // How far back the log reaches: deliveries that ended before this are retired (db/retention.ts).
    const retainedSince = webhooksRetainedSince(ctx.config).toISOString();
    sendPage(res, rows.map((d) => presentDelivery(d)), { ...pageMeta(page, limit, total), retained_since: retainedSince });
  });

  router.get('/v1/webhook-deliveries/:id', async (req, res) => {
    const delivery = await merchantDelivery(ctx, req);
    sendData(res, presentDelivery(delivery, await listAttempts(ctx.pool, delivery.id)));
  });

  router.post('/v1/webhook-deliveries/samples', async (req, res) => {
    const body = parseBody(sampleRequest, req.body);
    if (body.notify_url) {
      const problem = checkNotifyUrl(body.notify_url, ctx.config.NOTIFY_URL_ALLOWLIST);
      if (problem) throw new ApiError('INVALID_BODY', `notify_url: ${problem}`);
    }
    const url = body.notify_url || req.merchant.notify_url;
    if (!url) throw new ApiError('INVALID_BODY', 'notify_url: is required: this merchant has no default notify URL to send the sample to');
    const id = await ctx.pool.transaction(async (tx) => {
      const recent = await recentSamples(tx, req.merchant.id, 60);
      if (recent.count >= SAMPLES_PER_MINUTE) {
        const limited = new ApiError('TOO_MANY_REQUESTS', `At most ${SAMPLES_PER_MINUTE} samples a minute per merchant; retry after ${recent.freeInSeconds} seconds`);
        limited.retryAfterSeconds = recent.freeInSeconds;
        throw limited;
      }
      const [queued] = await enqueueWebhooks(tx, ctx.boss, [
        { merchantId: req.merchant.id, orderId: null, event: body.event, url, body: sentSampleBody(webhookEvent(body.event)!), sample: true },
      ]);
      return queued;
    });
    const queued = await findMerchantDelivery(ctx.pool, req.merchant.id, id);
    sendData(res, presentDelivery(queued!), 202);
  });

  router.post('/v1/webhook-deliveries/:id/resend', async (req, res) => {
    const delivery = await merchantDelivery(ctx, req);
    await resendDelivery(ctx.pool, ctx.boss, delivery.id);
    const reopened = await findMerchantDelivery(ctx.pool, req.merchant.id, delivery.id);
    sendData(res, presentDelivery(reopened!), 202);
  });

  return router;
}
