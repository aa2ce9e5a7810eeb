// How a route orders its vendors right now, and why (adaptive routing, db/routing.ts).
import { z } from 'zod';
import { configSchema } from '../../db/config.ts';
import { explainRoute, recentHealthEvents, routingPolicy } from '../../db/routing.ts';
import { routeMethod, routeOf } from '../../db/vendors.ts';
import { command, OpsError } from './command.ts';

/** The routing settings as the workers read them from the same environment. */
function policyFromEnv() {
  const { ROUTING_WINDOW_SECONDS, ROUTING_EXPLORE_PERCENT, ROUTING_MIN_CALLS, ROUTING_DEMOTE_PERCENT, VENDOR_TIMEOUT_MS } = configSchema.shape;
  const parsed = z.object({ ROUTING_WINDOW_SECONDS, ROUTING_EXPLORE_PERCENT, ROUTING_MIN_CALLS, ROUTING_DEMOTE_PERCENT, VENDOR_TIMEOUT_MS }).safeParse(process.env);
  if (!parsed.success) throw new OpsError(`routing settings: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return routingPolicy(parsed.data);
}

const round = (n: number) => Math.round(n * 1000) / 1000;

export const routesExplain = command({
  name: 'routes:explain',
  summary: 'Which vendor a new order or payout of a merchant would go to now, and why (mode, scores over the window, exploration)',
  usage: 'routes:explain --merchant ID --method QRIS|BANK|EWALLET [--destination BANK_OR_EWALLET_CODE] [--json]',
  flags: { merchant: { type: 'string' }, method: { type: 'string' }, destination: { type: 'string' } },
  input: z.object({
    merchant: z.uuid('--merchant must be a merchant UUID'),
    method: routeMethod,
    destination: z.string().min(1).max(32).optional(),
  }),
  async run(ctx, input) {
    const pool = await ctx.pool();
    const policy = policyFromEnv();
    const destination = input.method === 'QRIS' ? null : (input.destination?.toUpperCase() ?? null);
    const route = await routeOf(pool, await ctx.sealer(), input.merchant, input.method);
    const choice = await explainRoute(pool, route, input.method, destination, policy);
    const events = await recentHealthEvents(pool, route.vendors.map((v) => v.code), input.method);
    const demoted = choice.ranking.filter((r) => r.demoted).map((r) => r.code);
    const exploring = choice.mode === 'adaptive' && demoted.length > 0 && demoted.length < choice.ranking.length;
    const vendors = choice.ranking.map((r) => ({
      code: r.code,
      priority: r.priority,
      demoted: r.demoted,
      reason: r.reason,
      judged_by: r.score ? (r.scope === 'destination' ? `destination ${destination}` : `all ${input.method}`) : 'no calls',
      calls: r.score?.calls ?? 0,
      success_ratio: r.score ? round(r.score.successRatio) : null,
      failed_ratio: r.score ? round(r.score.failedRatio) : null,
      unknown_ratio: r.score ? round(r.score.unknownRatio) : null,
      p95_ms: r.score?.p95Ms ?? null,
      share: r.score ? round(r.score.share) : null,
    }));
    const json = {
      merchant_id: input.merchant,
      method: input.method,
      destination,
      mode: choice.mode,
      would_get: choice.vendors[0]?.code ?? null,
      order: choice.vendors.map((v) => v.code),
      window_seconds: policy.windowSeconds,
      min_calls: policy.minCalls,
      demote_percent: policy.demotePercent,
      slow_ms: policy.slowMs,
      exploration: { percent: choice.mode === 'adaptive' ? policy.explorePercent : 0, active: exploring, candidates: exploring ? demoted : [] },
      vendors,
      events: events.map((e) => ({ vendor: e.vendor_code, event: e.event, at: e.created_at.toISOString(), detail: e.detail })),
    };
    const lines = [
      json.would_get
        ? `${input.method}${destination ? ` to ${destination}` : ''} for merchant ${input.merchant}: ${json.would_get} now (${choice.mode} mode; order ${json.order.join(' → ')})`
        : `${input.method} for merchant ${input.merchant}: no enabled vendor routed`,
      `window ${policy.windowSeconds} s; a vendor with ${policy.minCalls}+ calls is demoted past ${policy.demotePercent}% failed or unknown, or p95 over ${policy.slowMs} ms`,
      ...vendors.map(
        (v) =>
          `  ${v.code.padEnd(12)} priority=${String(v.priority).padEnd(5)} ${v.demoted ? 'DEMOTED ' : 'ok      '} calls=${v.calls} ` +
          (v.calls ? `success=${v.success_ratio} unknown=${v.unknown_ratio} failed=${v.failed_ratio} p95=${v.p95_ms ?? '>10000'}ms share=${v.share} ` : '') +
          `(${v.judged_by}: ${v.reason})`,
      ),
      choice.mode === 'priority'
        ? 'priority mode: scores are shown, not used (route:set --mode adaptive to use them)'
        : exploring
          ? `exploration: ${policy.explorePercent}% of requests go first to ${demoted.join(' or ')}, so a recovery shows`
          : `exploration: ${policy.explorePercent}% of requests, when a vendor is demoted and another is not (none now)`,
      ...events.map((e) => `  ${e.created_at.toISOString()} ${e.vendor_code} ${e.event}`),
    ];
    return { json, text: lines.join('\n') };
  },
});
