// GET /qr/<token>.png: the order's QRIS payload as a PNG, for payers to scan. No API key (it is
// shown to the public), so the token in the URL is random and unguessable; the payload behind
// a token never changes, so the image is cacheable for as long as a browser likes.
import { createHash } from 'node:crypto';
import { Router } from 'express';
import type { AppContext } from './context.ts';
import { ApiError } from '../db/errors.ts';
import { findOrderByQrToken } from '../db/orders.sql.ts';
import { renderQrPng } from './qr-image.ts';

export function qrRoutes(ctx: AppContext): Router {
  const router = Router();
  router.get('/qr/:file', async (req, res) => {
    const match = /^([A-Za-z0-9_-]{16,64})\.png$/.exec(String(req.params.file));
    const order = match ? await findOrderByQrToken(ctx.pool, match[1]) : null;
    if (!order?.qris_string) throw new ApiError('NOT_FOUND', 'No such QR code');
    const etag = `"${createHash('sha256').update(order.qris_string).digest('base64url').slice(0, 27)}"`;
    res.setHeader('ETag', etag);
    res.setHeader('Cache-Control', 'public, max-age=86400, immutable');
    if (req.get('if-none-match') === etag) return void res.status(304).end();
    res.type('image/png').send(await renderQrPng(order.qris_string));
  });
  return router;
}
