// Master data (spec 2.7, 4.7): GET /v1/banks and GET /v1/ewallets list the enabled payout
// destinations, no meta; GET /assets/ewallets/<code>.svg serves each e-wallet's logo (public,
// as logos end up in merchants' client-side pages).
// Both lists are cached in the process for an hour (spec 8) and dropped the moment a change to
// the tables commits: a trigger notifies MASTER_DATA_CHANNEL, the process's one listener
// (api/context.ts) clears the cache. Clients may keep a list for the same hour; `private`
// because the response sits behind an API key, so no shared cache may answer for it.
import { Router } from 'express';
import type { AppContext } from '../context.ts';
import { ApiError } from '../../db/errors.ts';
import { publicBaseUrl } from '../../db/config.ts';
import { MASTER_DATA_CACHE_SECONDS, findEwalletByShortCode } from '../../db/master-data.ts';
import { sendData } from '../http/envelope.ts';
import { presentBank, presentEwallet } from '../../db/present/master-data.ts';
import { knownQuery } from '../http/list-filters.ts';

const CACHE_CONTROL = `private, max-age=${MASTER_DATA_CACHE_SECONDS}`;

export function masterDataRoutes(ctx: AppContext): Router {
  const router = Router();
  const baseUrl = publicBaseUrl(ctx.config);

  router.get('/v1/banks', knownQuery(), async (_req, res) => {
    const banks = await ctx.masterData.banks.get();
    res.setHeader('Cache-Control', CACHE_CONTROL);
    sendData(res, banks.map(presentBank));
  });

  router.get('/v1/ewallets', knownQuery(), async (_req, res) => {
    const ewallets = await ctx.masterData.ewallets.get();
    res.setHeader('Cache-Control', CACHE_CONTROL);
    sendData(res, ewallets.map((e) => presentEwallet(e, baseUrl)));
  });

  router.get('/assets/ewallets/:file', async (req, res) => {
    const match = /^([a-z0-9_]{2,32})\.svg$/.exec(String(req.params.file));
    const ewallet = match ? await findEwalletByShortCode(ctx.pool, match[1]) : null;
    if (!ewallet) throw new ApiError('NOT_FOUND', 'No such logo');
    res.setHeader('Cache-Control', 'public, max-age=86400');
    // An SVG is a document: nothing in it may run or load.
    res.setHeader('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'");
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.type('image/svg+xml').send(logoSvg(ewallet.name));
  });

  return router;
}

/** A neutral name badge; operators who want the brand artwork point logo_url at it instead. */
function logoSvg(name: string): string {
  const text = name.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return [
    '<svg xmlns="http://www.w3.org/2000/svg" width="160" height="48" viewBox="0 0 160 48">',
    '<rect width="160" height="48" rx="10" fill="#f2f4f7"/>',
    `<text x="80" y="30" text-anchor="middle" font-family="Helvetica, Arial, sans-serif" font-size="16" font-weight="600" fill="#1d2939">${text}</text>`,
    '</svg>',
  ].join('');
}
