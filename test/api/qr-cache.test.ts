// The QR image cache of GET /qr/<token>.png (api/qr.ts): each token's image is rendered once and
// kept, the most recently asked first; a token enters only once its order is found, so made-up
// tokens, however many, push no real image out. The route itself is tested with real orders in
// test/orders/v1-read.test.ts; here the cache is fed a fixed table of tokens and counts renders.
import t from 'tap';
import { createQrImageCache } from '../../api/qr.ts';

function cacheOf(size: number, orders: Record<string, string>) {
  const rendered: string[] = [];
  const cache = createQrImageCache(
    size,
    async (token) => orders[token] ?? null,
    async (qris) => {
      rendered.push(qris);
      return { png: Buffer.from(qris), etag: `"${qris}"` };
    },
  );
  return { cache, rendered };
}

t.test('made-up tokens push no real image out', async (t) => {
  const { cache, rendered } = cacheOf(2, { a: 'QRIS-A', b: 'QRIS-B' });
  t.equal((await cache.imageOf('a'))?.etag, '"QRIS-A"');
  t.equal((await cache.imageOf('b'))?.etag, '"QRIS-B"');
  for (let i = 0; i < 50; i++) t.equal(await cache.imageOf(`made-up-${i}`), null);
  await Promise.all(Array.from({ length: 50 }, (_, i) => cache.imageOf(`concurrent-${i}`)));
  t.equal(cache.size, 2, 'only real images are kept');
  await cache.imageOf('a');
  await cache.imageOf('b');
  t.same(rendered, ['QRIS-A', 'QRIS-B'], 'both still kept: rendered once each');
});

t.test('the least recently asked image goes first; concurrent first requests share one rendering', async (t) => {
  const { cache, rendered } = cacheOf(2, { a: 'QRIS-A', b: 'QRIS-B', c: 'QRIS-C' });
  await cache.imageOf('a');
  await cache.imageOf('b');
  await cache.imageOf('a');
  await cache.imageOf('c');
  await cache.imageOf('a');
  t.same(rendered, ['QRIS-A', 'QRIS-B', 'QRIS-C'], 'a was asked last: b went');
  await cache.imageOf('b');
  t.same(rendered.length, 4, 'b is rendered again');

  const { cache: fresh, rendered: once } = cacheOf(10, { x: 'QRIS-X' });
  const images = await Promise.all(Array.from({ length: 8 }, () => fresh.imageOf('x')));
  t.equal(once.length, 1, 'one rendering');
  t.ok(images.every((image) => image === images[0]), 'the same image for all eight');
});
