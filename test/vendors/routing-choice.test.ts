// How an adaptive route orders its vendors (db/routing.ts), as pure functions of the window's
// counts: demotion past the failure share or the latency bound, priority as the tie-breaker,
// exploration from an injected random source, recovery once a vendor's bad counts leave the
// window, destination counts where there are enough, and priority mode left as it was.
import t from 'tap';
import { chooseVendors, judge, scoreOutcomes, type RoutingPolicy } from '../../db/routing.ts';
import { LATENCY_BOUNDS_MS, type OutcomeRow } from '../../db/vendor-outcomes.ts';
import type { RoutedVendor } from '../../db/vendors.ts';

const policy: RoutingPolicy = { windowSeconds: 30, halfLifeSeconds: 5, explorePercent: 5, minCalls: 10, demotePercent: 20, slowMs: 4_000 };
const vendor = (code: string, priority: number): RoutedVendor => ({ code, kind: 'simulator', baseUrl: 'http://127.0.0.1:1', credentials: {}, priority });
const route = (mode: 'priority' | 'adaptive') => ({ mode, vendors: [vendor('a', 10), vendor('b', 20), vendor('c', 30)] });

/** One window row: counts, all calls in the 100 ms latency cell unless `slowCell` is given. */
function row(vendorCode: string, counts: { ok?: number; failed?: number; unknown?: number }, options: { method?: string; destination?: string; slowCell?: number; age?: number } = {}): OutcomeRow {
  const ok = counts.ok ?? 0;
  const failed = counts.failed ?? 0;
  const unknown = counts.unknown ?? 0;
  const latency = new Array(LATENCY_BOUNDS_MS.length + 1).fill(0);
  latency[options.slowCell ?? 0] = ok + failed + unknown;
  return { vendor_code: vendorCode, method: options.method ?? 'QRIS', destination: options.destination ?? '', ok, failed, unknown, latency_ms_buckets: latency, age_seconds: options.age ?? 0 };
}

const never = () => 0.99;
const codes = (vendors: RoutedVendor[]) => vendors.map((v) => v.code);

t.test('a vendor with more than ROUTING_DEMOTE_PERCENT failed or unknown goes behind the others; priority orders the rest', async (t) => {
  const scores = scoreOutcomes([row('a', { ok: 50, unknown: 50 }), row('b', { ok: 95, failed: 5 }), row('c', { ok: 100 })]);
  const choice = chooseVendors(route('adaptive'), 'QRIS', null, scores, policy, never);
  t.same(codes(choice.vendors), ['b', 'c', 'a'], 'a demoted; b before c by priority though c scores better');
  t.equal(choice.explored, null);
  t.match(choice.ranking.find((r) => r.code === 'a'), { demoted: true, reason: /50% of 100 calls failed or unknown \(recent ones weigh more\), over 20%/ });
  t.equal(scores.get('a|QRIS|')!.share, 100 / 300, 'share of the method’s calls');
  t.equal(scores.get('a|QRIS|')!.unknownRatio, 0.5);
});

t.test('slow answers demote too: p95 past half the vendor timeout', async (t) => {
  const slow = LATENCY_BOUNDS_MS.indexOf(5_000);
  const scores = scoreOutcomes([row('a', { ok: 100 }, { slowCell: slow })]);
  t.equal(scores.get('a|QRIS|')!.p95Ms, 5_000);
  t.match(judge(scores.get('a|QRIS|'), policy), { demoted: true, reason: /p95 latency ≤ 5000 ms, over 4000 ms/ });
  t.same(codes(chooseVendors(route('adaptive'), 'QRIS', null, scores, policy, never).vendors), ['b', 'c', 'a']);
});

t.test('too few calls to judge: the vendor keeps its priority place (how a quiet demoted vendor comes back)', async (t) => {
  const scores = scoreOutcomes([row('a', { unknown: 9 })]);
  t.match(judge(scores.get('a|QRIS|'), policy), { demoted: false, reason: /9 calls in the window, under 10: not judged/ });
  t.same(codes(chooseVendors(route('adaptive'), 'QRIS', null, scores, policy, never).vendors), ['a', 'b', 'c']);
  // Demoted at the last judgement: its few calls (exploration's) keep it demoted, however they went.
  const kept = scoreOutcomes([row('a', { ok: 9 })], Infinity, new Set(['a|QRIS']));
  t.match(judge(kept.get('a|QRIS|'), policy), { demoted: true, reason: /9 calls in the window, under 10: kept demoted until its calls show recovery/ });
  t.same(codes(chooseVendors(route('adaptive'), 'QRIS', null, kept, policy, never).vendors), ['b', 'c', 'a'], 'a stays behind the others');
  const recovered = scoreOutcomes([row('a', { ok: 10 })], Infinity, new Set(['a|QRIS']));
  t.match(judge(recovered.get('a|QRIS|'), policy), { demoted: false }, 'enough good calls restore it');
  t.match(judge(undefined, policy), { demoted: false }, 'no call at all in the window: its place again');
});

t.test('exploration: ROUTING_EXPLORE_PERCENT of requests go first to a demoted vendor, the rest in order after it', async (t) => {
  const scores = scoreOutcomes([row('a', { ok: 10, unknown: 10 }), row('c', { ok: 10, failed: 10 })]);
  // The first roll decides whether to explore (under 5 of 100), the second which demoted vendor.
  const rolls = (...values: number[]) => () => values.shift() ?? 0;
  const explored = chooseVendors(route('adaptive'), 'QRIS', null, scores, policy, rolls(0.049, 0.9));
  t.equal(explored.explored, 'a');
  t.same(codes(explored.vendors), ['a', 'b', 'c']);
  t.same(codes(chooseVendors(route('adaptive'), 'QRIS', null, scores, policy, rolls(0.049, 0.1)).vendors), ['c', 'b', 'a']);
  const notExplored = chooseVendors(route('adaptive'), 'QRIS', null, scores, policy, rolls(0.05));
  t.equal(notExplored.explored, null);
  t.same(codes(notExplored.vendors), ['b', 'c', 'a'], 'demoted ones by success ratio (equal here), then fewer unknowns: c’s failures were sure, a’s unknown');

  const healthy = scoreOutcomes([row('a', { ok: 20 }), row('b', { ok: 20 })]);
  t.equal(chooseVendors(route('adaptive'), 'QRIS', null, healthy, policy, () => 0).explored, null, 'nothing demoted: nothing to explore');
  const allBad = scoreOutcomes([row('a', { unknown: 20 }), row('b', { unknown: 20 }), row('c', { ok: 5, unknown: 15 })]);
  const worst = chooseVendors(route('adaptive'), 'QRIS', null, allBad, policy, () => 0);
  t.equal(worst.explored, null, 'every vendor demoted: the best of them leads, no exploration');
  t.same(codes(worst.vendors), ['c', 'a', 'b']);
});

t.test('recovery: once the bad buckets leave the window, the vendor is first again', async (t) => {
  const brownout = [row('a', { ok: 10, unknown: 10 }), row('b', { ok: 40 })];
  t.same(codes(chooseVendors(route('adaptive'), 'QRIS', null, scoreOutcomes(brownout), policy, never).vendors), ['b', 'c', 'a']);
  const after = [row('a', { ok: 12 }), row('b', { ok: 40 })];
  const choice = chooseVendors(route('adaptive'), 'QRIS', null, scoreOutcomes(after), policy, never);
  t.same(codes(choice.vendors), ['a', 'b', 'c']);
  t.notOk(choice.ranking[0].demoted);
});

t.test('a payout is judged by its destination’s counts at the vendor when there are enough, else by the method’s', async (t) => {
  const scores = scoreOutcomes([
    row('a', { ok: 5, unknown: 15 }, { method: 'BANK', destination: 'BCA' }),
    row('a', { ok: 100 }, { method: 'BANK', destination: 'MANDIRI' }),
    row('b', { ok: 20 }, { method: 'BANK', destination: 'BCA' }),
  ]);
  const bca = chooseVendors(route('adaptive'), 'BANK', 'BCA', scores, policy, never);
  t.same(codes(bca.vendors), ['b', 'c', 'a'], 'a fails at BCA');
  t.equal(bca.ranking.find((r) => r.code === 'a')!.scope, 'destination');
  const mandiri = chooseVendors(route('adaptive'), 'BANK', 'MANDIRI', scores, policy, never);
  t.same(codes(mandiri.vendors), ['a', 'b', 'c'], 'and pays MANDIRI well');
  const bri = chooseVendors(route('adaptive'), 'BANK', 'BRI', scores, policy, never);
  t.equal(bri.ranking.find((r) => r.code === 'a')!.scope, 'method', 'no BRI counts: the method’s (15 unknown of 120: not demoted)');
  t.same(codes(bri.vendors), ['a', 'b', 'c']);
});

t.test('priority mode orders by priority whatever the scores; only the route’s (enabled) vendors are ever chosen', async (t) => {
  const scores = scoreOutcomes([row('a', { unknown: 100 }), row('z', { ok: 1000 })]);
  const choice = chooseVendors(route('priority'), 'QRIS', null, scores, policy, () => 0);
  t.same(codes(choice.vendors), ['a', 'b', 'c']);
  t.equal(choice.explored, null);
  t.ok(choice.ranking[0].demoted, 'the judgement is still shown');
  const adaptive = chooseVendors({ mode: 'adaptive', vendors: [vendor('a', 10)] }, 'QRIS', null, scores, policy, () => 0);
  t.same(codes(adaptive.vendors), ['a'], 'z scores best but is not on the route (disabled or removed vendors are not)');
});

t.test('recent buckets weigh more: a brownout shows through a long healthy past, and a recovery through a bad one', async (t) => {
  // 25 s ago (weight 1/32 at a 5 s half-life) against now.
  const brownout = scoreOutcomes([row('a', { ok: 500 }, { age: 25 }), row('a', { ok: 10, unknown: 10 }, { age: 0 })], policy.halfLifeSeconds);
  t.match(judge(brownout.get('a|QRIS|'), policy), { demoted: true }, 'unweighted it would be 10 of 520 (1.9 %)');
  t.equal(brownout.get('a|QRIS|')!.calls, 520, 'the minimum counts every call');
  const recovered = scoreOutcomes([row('a', { ok: 10, unknown: 50 }, { age: 25 }), row('a', { ok: 10 }, { age: 0 })], policy.halfLifeSeconds);
  t.match(judge(recovered.get('a|QRIS|'), policy), { demoted: false }, 'unweighted it would be 50 of 70');
  t.match(judge(scoreOutcomes([row('a', { ok: 10, unknown: 50 }, { age: 25 }), row('a', { ok: 10 }, { age: 0 })]).get('a|QRIS|'), policy), { demoted: true }, 'without the weights: still demoted');
  // A vendor already demoted is restored on the whole window, every call alike: a short good run
  // among exploration's few calls does not hand it the traffic back.
  const explored = [row('a', { ok: 3, unknown: 4 }, { age: 20 }), row('a', { ok: 5 }, { age: 0 })];
  t.match(judge(scoreOutcomes(explored, policy.halfLifeSeconds).get('a|QRIS|'), policy), { demoted: false }, 'judged afresh, the recent good run restores it');
  t.match(judge(scoreOutcomes(explored, policy.halfLifeSeconds, new Set(['a|QRIS'])).get('a|QRIS|'), policy),
    { demoted: true, reason: /over the whole window 33.3% of 12 calls failed or unknown.*kept demoted until the window is clean/ }, 'demoted before: kept demoted');
  const clean = [row('a', { ok: 10, unknown: 1 }, { age: 20 }), row('a', { ok: 5 }, { age: 0 })];
  t.match(judge(scoreOutcomes(clean, policy.halfLifeSeconds, new Set(['a|QRIS'])).get('a|QRIS|'), policy), { demoted: false }, 'a clean window restores it');
});
