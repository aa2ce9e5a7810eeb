// Request bodies are checked before anything else runs, for every route and before
// authentication: so nothing in them may cost more than a scan of their bytes.
import t from 'tap';
import { MAX_DEPTH, nestingDepth, nulPath } from '../../api/http/body.ts';
import { startApi } from '../helpers/api.ts';
import { testConfig } from '../helpers/config.ts';
import { testDatabase } from '../helpers/db.ts';
import { call } from '../helpers/http.ts';

const api = await startApi(t, testConfig(await testDatabase(t), { BODY_LIMIT: '200kb' }));

t.test('a nesting bomb is 400 INVALID_BODY before parsing, unauthenticated, on any route', async (t) => {
  const bomb = '['.repeat(50_000) + ']'.repeat(50_000);
  for (const path of ['/v1/orders', '/callbacks/sim', '/api/v1/orders/create']) {
    const res = await call(api.url, { path, headers: { 'content-type': 'application/json' }, body: bomb });
    t.equal(res.status, 400, `${path}: ${res.text.slice(0, 120)}`);
    // The legacy API answers in its own envelope (code 400, "Invalid request parameters").
    t.match(res.text, /INVALID_BODY|Invalid request parameters/, path);
  }
  const health = await call(api.url, { method: 'GET', path: '/healthz' });
  t.equal(health.status, 200, 'the process still answers');
});

t.test('nesting up to the limit is parsed; one more level is refused', async (t) => {
  const nested = (levels: number) => ({ amount: 1, metadata: JSON.parse('{"a":'.repeat(levels - 1) + '1' + '}'.repeat(levels - 1)) });
  t.equal(nestingDepth(Buffer.from(JSON.stringify(nested(MAX_DEPTH)))), MAX_DEPTH);
  const ok = await call(api.url, { path: '/v1/orders', body: nested(MAX_DEPTH) });
  t.equal(ok.status, 401, 'parsed, then refused for the missing key');
  const deep = await call(api.url, { path: '/v1/orders', body: nested(MAX_DEPTH + 1) });
  t.equal(deep.status, 400);
  t.equal(deep.json?.error?.code, 'INVALID_BODY');
});

t.test('brackets inside strings do not count; escapes are followed', (t) => {
  t.equal(nestingDepth(Buffer.from(JSON.stringify({ s: '[[[[{{{{"\\' + '['.repeat(100) }))), 1);
  t.equal(nestingDepth(Buffer.from('[[1],[2,[3]]]')), 3);
  t.end();
});

t.test('a NUL escape anywhere is found without recursion, with its path', async (t) => {
  let deep: unknown = 'x\u0000';
  for (let i = 0; i < 100_000; i++) deep = [deep];
  t.same(nulPath({ a: 1, b: { c: ['ok', 'n\u0000'] } }), ['b', 'c', '1']);
  t.same(nulPath({ ['k\u0000']: 1 }), ['k\u0000']);
  t.equal(nulPath(deep)?.length, 100_000, 'a value 100,000 levels down (no stack overflow)');
  t.equal(nulPath({ a: 'clean' }), null);
  const res = await call(api.url, { path: '/v1/orders', body: { merchant_order_id: 'a\u0000b', amount: 1 } });
  t.equal(res.status, 400);
  t.match(res.json?.error, { code: 'INVALID_BODY', message: /merchant_order_id: must not contain NUL/ });
});
