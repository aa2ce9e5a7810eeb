// GET /qr/<token>.png: the order's QRIS payload as a PNG, for payers to scan. No API key (it is
// shown to the public), so the token in the URL is random and unguessable; the payload behind
// a token never changes, so the image is cacheable for as long as a browser likes.
//
// Rendering costs ~9 ms of this process's event loop, and anyone holding a link can ask for it
// again and again: each token's image is rendered once and kept (the most recently asked
// QR_CACHE_SIZE images, a few kB each), and concurrent requests for one token share its
// rendering. A token enters the cache only once its order has been found with a QR: an unknown
// token, or an order still being created, is never kept and pushes nothing out, so made-up
// tokens cannot evict real images.
import { createHash } from 'node:crypto';
import { Router } from 'express';
import type { AppContext } from './context.ts';
import { ApiError } from '../db/errors.ts';
import { qrRenders } from '../db/metrics.ts';
import { findOrderByQrToken } from '../db/orders.sql.ts';
import { renderQrPng } from './qr-image.ts';

/** Images kept per process (~3 kB each). */
export const QR_CACHE_SIZE = 2_000;

export interface QrImage {
  png: Buffer;
  etag: string;
}

/**
 * The most recently asked `maxImages` images by token. `find` gives a token's QRIS payload (null:
 * no order, or none with a QR yet); `render` draws it. Map order is recency: a hit is moved to
 * the end, the first entry is the one to drop.
 */
export function createQrImageCache(maxImages: number, find: (token: string) => Promise<string | null>, render: (qris: string) => Promise<QrImage>) {
  const images = new Map<string, Promise<QrImage>>();
  const touch = (token: string, image: Promise<QrImage>) => {
    images.delete(token);
    images.set(token, image);
  };
  return {
    async imageOf(token: string): Promise<QrImage | null> {
      const kept = images.get(token);
      if (kept) {
        touch(token, kept);
        return kept;
      }
      const qris = await find(token);
      if (!qris) return null;
      // A concurrent first request may have started the rendering while this one looked.
      const meanwhile = images.get(token);
      if (meanwhile) return meanwhile;
      const made = render(qris);
      touch(token, made);
      while (images.size > maxImages) images.delete(images.keys().next().value!);
      // A failed rendering is not kept: the next request tries again.
      made.catch(() => {
        if (images.get(token) === made) images.delete(token);
      });
      return made;
    },
    get size() {
      return images.size;
    },
  };
}

export function qrRoutes(ctx: AppContext): Router {
  const router = Router();
  const images = createQrImageCache(
    QR_CACHE_SIZE,
    async (token) => (await findOrderByQrToken(ctx.pool, token))?.qris_string ?? null,
    async (qris) => {
      qrRenders.inc();
      return { png: await renderQrPng(qris), etag: `"${createHash('sha256').update(qris).digest('base64url').slice(0, 27)}"` };
    },
  );

  router.get('/qr/:file', async (req, res) => {
    const match = /^([A-Za-z0-9_-]{16,64})\.png$/.exec(String(req.params.file));
    const image = match ? await images.imageOf(match[1]) : null;
    if (!image) throw new ApiError('NOT_FOUND', 'No such QR code');
    res.setHeader('ETag', image.etag);
    res.setHeader('Cache-Control', 'public, max-age=86400, immutable');
    if (req.get('if-none-match') === image.etag) return void res.status(304).end();
    res.type('image/png').send(image.png);
  });
  return router;
}
