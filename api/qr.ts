// GET /qr/<token>.png: the order's QRIS payload as a PNG, for payers to scan. No API key (it is
// shown to the public), so the token in the URL is random and unguessable; the payload behind
// a token never changes, so the image is cacheable for as long as a browser likes.
//
// Rendering costs ~9 ms of this process's event loop, and anyone holding a link can ask for it
// again and again: each token's image is rendered once and kept (the most recently asked
// QR_CACHE_SIZE images, a few kB each), and concurrent requests for one token share its
// rendering. A token with no image yet (an unknown one, an order still being created) is
// never kept, so made-up tokens cannot push real ones out.
import { createHash } from 'node:crypto';
import { Router } from 'express';
import type { AppContext } from './context.ts';
import { ApiError } from '../db/errors.ts';
import { qrRenders } from '../db/metrics.ts';
import { findOrderByQrToken } from '../db/orders.sql.ts';
import { renderQrPng } from './qr-image.ts';

/** Images kept per process (~3 kB each). */
export const QR_CACHE_SIZE = 2_000;

interface QrImage {
  png: Buffer;
  etag: string;
}

export function qrRoutes(ctx: AppContext): Router {
  const router = Router();
  // Map order is recency: a hit is moved to the end, the first entry is the one to drop.
  const images = new Map<string, Promise<QrImage | null>>();

  const imageOf = (token: string): Promise<QrImage | null> => {
    const kept = images.get(token);
    if (kept) {
      images.delete(token);
      images.set(token, kept);
      return kept;
    }
    const made = (async () => {
      const order = await findOrderByQrToken(ctx.pool, token);
      if (!order?.qris_string) return null;
      qrRenders.inc();
      return {
        png: await renderQrPng(order.qris_string),
        etag: `"${createHash('sha256').update(order.qris_string).digest('base64url').slice(0, 27)}"`,
      };
    })();
    images.set(token, made);
    // Nothing to keep (or a failure): the next request asks again.
    const forget = () => {
      if (images.get(token) === made) images.delete(token);
    };
    made.then((image) => {
      if (!image) forget();
    }, forget);
    while (images.size > QR_CACHE_SIZE) images.delete(images.keys().next().value!);
    return made;
  };

  router.get('/qr/:file', async (req, res) => {
    const match = /^([A-Za-z0-9_-]{16,64})\.png$/.exec(String(req.params.file));
    const image = match ? await imageOf(match[1]) : null;
    if (!image) throw new ApiError('NOT_FOUND', 'No such QR code');
    res.setHeader('ETag', image.etag);
    res.setHeader('Cache-Control', 'public, max-age=86400, immutable');
    if (req.get('if-none-match') === image.etag) return void res.status(304).end();
    res.type('image/png').send(image.png);
  });
  return router;
}
