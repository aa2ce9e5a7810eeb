// Order support tools: pay an order at the simulator, inspect, resend and trigger webhooks.
import got from 'got';
import { z } from 'zod';
import { sql, type Pool } from '../../db/pool.ts';
import { getVendor } from '../../db/vendors.ts';
import { getMerchant, MerchantNotFound } from '../../db/merchants.ts';
import { enqueueWebhooks, findDelivery, listAttempts, listDeliveriesByRef, listMerchantDeliveries, resendDelivery } from '../../db/webhooks.ts';
import { sentSampleBody, webhookEvent, webhookEvents } from '../../api/openapi/webhook-events.ts';
import { command, OpsError } from './command.ts';
import { eachId, givenIds, manyIdFlags, oneIdGiven } from './many-ids.ts';

const refCode = z.string('--ref is required: the order\'s ref_code (ORD-…)').regex(/^ORD-\d+-[0-9A-Z]+$/,
  '--ref must be an order\'s ref_code as POST /v1/orders answered it: ORD-<digits>-<capital letters and digits>, e.g. ORD-1763713800-7K3M9Q2X4B');

async function orderByRef(pool: Pool, ref: string) {
  const order = await pool.maybeOne(sql.type(z.object({ id: z.string(), status: z.string(), vendor_code: z.string().nullable() }))`
    select id, status, vendor_code from orders where ref_code = ${ref}`);
  if (!order) throw new OpsError(`no order ${ref}`);
  return order;
}

/**
 * Where the simulator behind a vendor takes payments: its own base URL, or, for a vendor
 * pointed at one of its gateway dialects (<simulator>/xendit, /midtrans, /snap), the simulator's
 * root. Any other vendor is a real gateway, where nobody can pay from here.
 */
function simulatorRootOf(vendor: { kind: string; baseUrl: string }): string | null {
  const base = vendor.baseUrl.replace(/\/+$/, '');
  if (vendor.kind === 'simulator') return base;
  const dialect = /^(https?:\/\/(?:127\.0\.0\.1|localhost|\[::1\])(?::\d+)?)\/(xendit|midtrans|snap)$/.exec(base);
  return dialect ? dialect[1] : null;
}

export const simulatePay = command({
  name: 'simulate:pay',
  summary: "Pay an order's QR at the simulator gateway (as a payer's phone would)",
  usage: 'simulate:pay --ref ORD-... [--force] [--json]',
  flags: { ref: { type: 'string' }, force: { type: 'boolean' } },
  input: z.object({ ref: refCode, force: z.boolean().optional() }),
  async run(ctx, input) {
    const pool = await ctx.pool();
    const order = await orderByRef(pool, input.ref);
    if (!order.vendor_code) throw new OpsError(`order ${input.ref} has no QR yet (status ${order.status})`);
    const vendor = await getVendor(pool, await ctx.sealer(), order.vendor_code);
    const root = vendor && simulatorRootOf(vendor);
    if (!root) throw new OpsError(`order ${input.ref} is at vendor ${order.vendor_code}, not a simulator`);
    const response = await got.post(`${root}/simulate/pay`, {
      json: { reference: input.ref, ...(input.force ? { force: true } : {}) },
      throwHttpErrors: false,
      retry: { limit: 0 },
      timeout: { request: 10_000 },
    });
    const body = JSON.parse(response.body || '{}');
    if (response.statusCode !== 200) {
      throw new OpsError(`simulator refused the payment (${response.statusCode}): ${body?.error?.message ?? response.body}`);
    }
    return { json: body, text: `paid ${input.ref} at ${vendor.code} (rrn ${body.rrn}); the callback is on its way to Kasir` };
  },
});

export const webhooksList = command({
  name: 'webhooks:list',
  summary: 'List webhook deliveries and their attempts: of one resource, or of a merchant',
  usage: 'webhooks:list (--ref ORD-|DSB-|STL-|RFD-... | --merchant ID [--status PENDING|DELIVERED|FAILED]) [--json]',
  flags: { ref: { type: 'string' }, merchant: { type: 'string' }, status: { type: 'string' } },
  input: z
    .object({
      ref: z.string().regex(/^(ORD|DSB|RFD)-\d+-[0-9A-Z]+$|^STL-\d{8}-\d+(-\d+)?$/, '--ref must be an ORD-, DSB-, STL- or RFD- reference code').optional(),
      merchant: z.uuid('--merchant must be a merchant id').optional(),
      status: z.enum(['PENDING', 'DELIVERED', 'FAILED'], '--status must be PENDING, DELIVERED or FAILED').optional(),
    })
    .refine((i) => (i.ref === undefined) !== (i.merchant === undefined), 'give either --ref or --merchant')
    .refine((i) => i.status === undefined || i.merchant !== undefined, '--status goes with --merchant'),
  async run(ctx, input) {
    const pool = await ctx.pool();
    const found = input.ref
      ? await listDeliveriesByRef(pool, input.ref)
      : (await listMerchantDeliveries(pool, input.merchant!, { status: input.status }, 1, 100))[0];
    if (input.ref && found.length === 0) {
      const known = await pool.exists(sql.unsafe`
        select 1 from orders where ref_code = ${input.ref} union all select 1 from disbursements where ref_code = ${input.ref}
        union all select 1 from settlements where ref_code = ${input.ref} union all select 1 from refunds where ref_code = ${input.ref}`);
      if (!known) throw new OpsError(`no order, disbursement, settlement or refund ${input.ref}`);
    }
    const deliveries = await Promise.all(
      found.map(async (d) => ({
        id: d.id,
        event: d.event,
        sample: d.sample,
        resource: d.resource_ref,
        url: d.url,
        status: d.status,
        attempts: (await listAttempts(pool, d.id)).map((a) => ({ ...a, created_at: a.created_at.toISOString() })),
        next_attempt_at: d.next_attempt_at?.toISOString() ?? null,
        created_at: d.created_at.toISOString(),
      })),
    );
    const text = deliveries.length
      ? deliveries
          .map((d) => `${d.id}  ${d.event.padEnd(24)} ${d.status.padEnd(9)} ${d.sample ? 'SAMPLE' : (d.resource ?? '')} ${d.url}\n${d.attempts.map((a) => `    #${a.attempt} ${a.status_code ?? '---'} ${a.latency_ms}ms ${a.error ?? ''}`).join('\n')}`)
          .join('\n')
      : 'no webhook deliveries';
    return { json: { deliveries }, text };
  },
});

export const webhooksResend = command({
  name: 'webhooks:resend',
  summary: 'Send webhook deliveries again now (same body and webhook-id): one, several (--id repeated) or a column of ids on stdin',
  usage: 'webhooks:resend (--id DELIVERY_ID [--id DELIVERY_ID …] | --stdin) [--json]',
  flags: manyIdFlags,
  input: z.object({ id: z.array(z.uuid('--id must be a delivery UUID')).optional(), stdin: z.boolean().optional() }),
  async run(ctx, input) {
    const pool = await ctx.pool();
    const boss = await ctx.boss();
    const ids = await givenIds(input, 'delivery');
    const { done: queued, skipped } = await eachId(ids, async (id) => {
      if (!(await findDelivery(pool, id))) throw new OpsError(`no webhook delivery ${id}`);
      await resendDelivery(pool, boss, id);
      return id;
    });
    if (oneIdGiven(input)) {
      if (skipped.length) throw new OpsError(skipped[0].reason);
      return { json: { id: queued[0], queued: true }, text: `delivery ${queued[0]} queued for another attempt` };
    }
    const text = [`${queued.length} deliveries queued for another attempt`, ...skipped.map((s) => `skipped: ${s.reason}`)].join('\n');
    return { json: { queued, skipped }, text, exitCode: skipped.length ? 1 : 0 };
  },
});

export const webhooksTrigger = command({
  name: 'webhooks:trigger',
  summary: "Send a signed sample of a catalogued event to a merchant's webhook URL (a delivery marked as a sample)",
  usage: 'webhooks:trigger --merchant ID --event E [--url URL] [--json]',
  flags: { merchant: { type: 'string' }, event: { type: 'string' }, url: { type: 'string' } },
  input: z.object({
    merchant: z.uuid('--merchant must be a merchant id'),
    event: z.string(`--event is required: one of ${webhookEvents.map((e) => e.name).join(', ')}`)
      .refine((e) => webhookEvent(e) !== undefined, `--event must be one of ${webhookEvents.map((e) => e.name).join(', ')}`),
    url: z.url({ protocol: /^https?$/, error: '--url must be an http(s) URL' }).optional(),
  }),
  async run(ctx, input) {
    const pool = await ctx.pool();
    const merchant = await getMerchant(pool, input.merchant).catch((err: unknown) => {
      throw err instanceof MerchantNotFound ? new OpsError(`no merchant ${input.merchant}`) : err;
    });
    const url = input.url ?? merchant.notify_url;
    if (!url) throw new OpsError(`merchant ${input.merchant} has no default notify URL: give --url`);
    // The real path: an outbox row (flagged as a sample) and its job, delivered and signed by the
    // webhook worker like any event (which also checks the destination, as for any URL); its
    // body is the catalogue's sample, stamped with its own id and time.
    const boss = await ctx.boss();
    const [id] = await pool.transaction((tx) => enqueueWebhooks(tx, boss, [
      { merchantId: merchant.id, orderId: null, event: input.event, url, body: sentSampleBody(webhookEvent(input.event)!), sample: true },
    ]));
    return { json: { id, event: input.event, url, sample: true }, text: `sample ${input.event} queued for ${url}: delivery ${id} (webhooks:list --merchant ${merchant.id})` };
  },
});
