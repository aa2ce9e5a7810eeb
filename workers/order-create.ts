// order-create: turns a CREATING attempt into a PENDING order with a vendor's QR.
//
// Vendors are tried in route order (an adaptive route's: db/routing.ts, which orders the vendors
// of an attempt nothing was sent for yet and never moves one already sent). Before each call the vendor is recorded as pending in a
// committed row, so a crash mid-call is recoverable: the retried job first asks that vendor
// (query by our ref_code) what it did. Only a definite failure moves on to the next vendor; an
// unknown outcome (timeout, 5xx) is never retried elsewhere, because the first vendor may have
// issued a QR the payer could still pay. It is left to order-reconcile, and the waiting API
// request is told at once so it can answer 409 ORDER_PENDING_CONFIRMATION.
import { brandBaseUrl, findBrandById } from '../db/brands.ts';
import { perPool } from '../db/coalesce.ts';
import { publicBaseUrl } from '../db/config.ts';
import { completionFor } from '../db/job-complete.ts';
import { logger } from '../db/logger.ts';
import { getMerchant } from '../db/merchants.ts';
import { announceUnresolved, confirmOrder, failOrder } from '../db/orders.ts';
import { clearVendorPending, findOrderById, loadAndMarkVendorPending, markVendorPending, type OrderRow } from '../db/orders.sql.ts';
import { sendJob } from '../db/queue.ts';
import { chooseVendors, currentScores, routingPolicy } from '../db/routing.ts';
import { getVendor, routeOf, type RouteMode, type RoutedVendor } from '../db/vendors.ts';
import type { WorkerContext } from './context.ts';
import { gatewayOf } from './gateway.ts';
import { Completed } from './work.ts';
import type { QrisStatus } from '../gateways/gateway.ts';
import { validateVendorQris } from '../gateways/qris.ts';

export async function scheduleReconcile(ctx: WorkerContext, orderId: string): Promise<void> {
  await sendJob(ctx.boss, 'order-reconcile', { order_id: orderId }, { startAfter: ctx.config.ORDER_RECONCILE_DELAY_SECONDS });
}

/**
 * What a vendor's answer to a query means for a CREATING attempt: confirmed (it has our QR),
 * absent (it never accepted the create), or still unknown.
 */
export async function resolveWithVendor(ctx: WorkerContext, order: OrderRow, vendorCode: string): Promise<'confirmed' | 'absent' | 'unknown'> {
  const vendor = await getVendor(ctx.pool, ctx.sealer, vendorCode);
  if (!vendor) return 'absent';
  const answer = await gatewayOf(ctx, vendor).queryQris(order.ref_code, order.vendor_order_id);
  if (answer.kind !== 'ok') return 'unknown';
  const status: QrisStatus = answer.value;
  if (status.status === 'NOT_FOUND') return 'absent';
  const problem = status.qrisString ? validateVendorQris(status.qrisString, order.amount) : 'no QRIS string';
  if (problem || !status.qrisString) return 'absent';
  const { baseUrl } = await merchantRouting(ctx, order.merchant_id);
  await confirmOrder(ctx.pool, order, { vendorCode, vendorOrderId: status.vendorOrderId ?? order.ref_code, qrisString: status.qrisString }, 'reconcile', baseUrl);
  return 'confirmed';
}

// Routes, merchant names and brands change rarely (ops commands) and every create reads them:
// each worker process keeps them for ROUTING_CACHE_MS, as the API does with brands, so a route
// or vendor change reaches every worker within that time. "No vendor" is never cached: a
// merchant routed a moment ago is served at once. `baseUrl` is the merchant's brand's, where the
// stored V1 answer's checkout_url and qr_url point (db/brands.ts brandBaseUrl).
const ROUTING_CACHE_MS = 5_000;
const routing = new Map<string, { until: number; value: Promise<{ mode: RouteMode; vendors: RoutedVendor[]; merchantName: string; baseUrl: string }> }>();

function merchantRouting(ctx: WorkerContext, merchantId: string) {
  const hit = routing.get(merchantId);
  if (hit && hit.until > Date.now()) return hit.value;
  const value = Promise.all([routeOf(ctx.pool, ctx.sealer, merchantId, 'QRIS'), getMerchant(ctx.pool, merchantId)]).then(
    async ([route, merchant]) => ({
      ...route,
      merchantName: merchant.name,
      baseUrl: brandBaseUrl(publicBaseUrl(ctx.config), await findBrandById(ctx.pool, merchant.brand_id)),
    }),
  );
  if (routing.size > 10_000) routing.clear();
  routing.set(merchantId, { until: Date.now() + ROUTING_CACHE_MS, value });
  const forget = () => routing.get(merchantId)?.value === value && routing.delete(merchantId);
  value.then((r) => r.vendors.length === 0 && forget(), forget); // neither "no vendor" nor a failed load is kept
  return value;
}

/**
 * The vendors of a new attempt in the order to try them: its route's priority order, or for an
 * adaptive route the order db/routing.ts gives by the process's cached scores (no statement).
 */
async function ordered(ctx: WorkerContext, route: { mode: RouteMode; vendors: RoutedVendor[] }): Promise<RoutedVendor[]> {
  if (route.mode === 'priority' || route.vendors.length < 2) return route.vendors;
  const policy = routingPolicy(ctx.config);
  return chooseVendors(route, 'QRIS', null, await currentScores(ctx.pool, policy), policy).vendors;
}

// The fresh attempts' marks of one process, one statement for the jobs that start together.
const markFresh = perPool(loadAndMarkVendorPending, 100);

/**
 * The common case in one statement (shared with the attempts fetched beside it): a fresh
 * attempt, loaded and marked pending at its merchant's first vendor (the routing comes from the
 * cache by the job's merchant_id). Returns the attempt as it was before the mark, with the
 * routing it was marked by; null for every other case.
 */
async function loadFresh(ctx: WorkerContext, payload: { order_id: string; merchant_id?: string }) {
  if (!payload.merchant_id) return null;
  const routed = await merchantRouting(ctx, payload.merchant_id);
  const vendors = await ordered(ctx, routed);
  const first = vendors[0];
  if (!first) return null;
  const marked = await markFresh(ctx.pool)({ id: payload.order_id, vendorCode: first.code });
  if (!marked || marked.merchant_id !== payload.merchant_id) return null;
  const order: OrderRow = { ...marked, pending_vendor: null, vendors_tried: marked.vendors_tried.filter((code) => code !== first.code) };
  return { order, routed: { ...routed, vendors }, premarked: first.code };
}

let completionWarned = false;
function completionUnavailable(err: unknown): null {
  if (!completionWarned) logger.warn({ err }, "order-create jobs completed by the work loop: pg-boss's completion cannot be embedded");
  completionWarned = true;
  return null;
}

export async function handleOrderCreate(ctx: WorkerContext, payload: { order_id: string; merchant_id?: string }, job?: { id: string; retryCount: number }) {
  const fresh = await loadFresh(ctx, payload);
  // The vendor already recorded as pending by loadFresh: its call needs no second mark.
  let premarked = fresh?.premarked ?? null;
  let order = fresh?.order ?? (await findOrderById(ctx.pool, payload.order_id));
  if (!order || order.status !== 'CREATING') return { skipped: order?.status ?? 'missing' };

  if (order.pending_vendor) {
    const resolved = await resolveWithVendor(ctx, order, order.pending_vendor);
    if (resolved === 'confirmed') return { resolved: order.pending_vendor };
    if (resolved === 'unknown') {
      await scheduleReconcile(ctx, order.id);
      await announceUnresolved(ctx.pool, order.id);
      return { unresolved: order.pending_vendor };
    }
    await clearVendorPending(ctx.pool, order.id);
    // The vendor has no record: the call cut off by the crash never reached it, so it did not
    // fail either. Call it again (vendors are idempotent on our reference) rather than skip it.
    const absent = order.pending_vendor;
    order = { ...order, vendors_tried: order.vendors_tried.filter((code) => code !== absent) };
  }

  // The routing the attempt was marked by, so the vendor marked is the vendor called first.
  const routed = fresh?.routed ?? (await merchantRouting(ctx, order.merchant_id));
  const { merchantName, baseUrl } = routed;
  const vendors = fresh ? routed.vendors : await ordered(ctx, routed);
  if (vendors.length === 0) {
    await failOrder(ctx.pool, order.id, 'NO_VENDOR', { reason: 'no QRIS vendor is routed for this merchant' });
    return { failed: 'NO_VENDOR' };
  }

  const failures: Record<string, string> = {};
  for (const vendor of vendors.filter((v) => !order!.vendors_tried.includes(v.code))) {
    if (vendor.code !== premarked && !(await markVendorPending(ctx.pool, order.id, vendor.code))) {
      // Disabled or removed since this worker cached its routes: it is handed nothing.
      failures[vendor.code] = 'vendor disabled or removed';
      continue;
    }
    premarked = null;
    const result = await gatewayOf(ctx, vendor).createQris({
      reference: order.ref_code,
      amount: order.amount,
      expiresAt: order.expires_at,
      merchantName,
      merchantCity: 'JAKARTA',
      callbackUrl: `${publicBaseUrl(ctx.config)}/callbacks/${vendor.code}`,
    });
    if (result.kind === 'ok') {
      const problem = validateVendorQris(result.value.qrisString, order.amount);
      if (!problem) {
        // The job is completed by the confirmation's own statement when it confirms (one commit
        // for both); otherwise the work loop completes it as any other, as it does when the
        // completion cannot be built (a pg-boss whose text Kasir does not know): the QR in hand
        // is confirmed either way.
        const completion = job && (await completionFor(ctx.boss, 'order-create').catch(completionUnavailable));
        const settle = job && completion ? { completion, id: job.id, retryCount: job.retryCount } : undefined;
        const done = await confirmOrder(ctx.pool, order, { vendorCode: vendor.code, ...result.value }, 'vendor-worker', baseUrl, settle);
        // Not confirmed and not settled by the statement: the order stopped being an attempt while
        // the vendor worked (another attempt of its job confirmed it, or it was paid first), so
        // the QR this call made was not taken, and the job's output says so for jobs:list.
        if (done === false) return { superseded: vendor.code };
        return done === 'settled' ? new Completed({ confirmed: vendor.code }) : { confirmed: vendor.code };
      }
      failures[vendor.code] = `unusable QRIS: ${problem}`;
    } else if (result.kind === 'failed') {
      failures[vendor.code] = result.reason;
    } else {
      logger.warn({ order: order.ref_code, vendor: vendor.code, reason: result.reason }, 'vendor outcome unknown; reconciling');
      await scheduleReconcile(ctx, order.id);
      await announceUnresolved(ctx.pool, order.id);
      return { unresolved: vendor.code };
    }
    logger.warn({ order: order.ref_code, vendor: vendor.code, reason: failures[vendor.code] }, 'vendor failed; trying the next');
    await clearVendorPending(ctx.pool, order.id);
    order = { ...order, vendors_tried: [...order.vendors_tried, vendor.code] };
  }
  await failOrder(ctx.pool, order.id, 'VENDOR_ERROR', { failures });
  return { failed: 'VENDOR_ERROR', failures };
}
