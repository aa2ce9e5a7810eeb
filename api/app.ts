// Builds the Express app. No listening, no process concerns: api/server.ts and the tests
// start it. Order matters: default headers (on every answer, health included), then health (no
// database-dependent middleware in front of it), then request id, body, brand; each router
// applies authentication to its own paths.
import express, { type Express } from 'express';
import type { AppContext } from './context.ts';
import { requireApiKey } from './http/auth.ts';
import { authorizeRole } from './http/roles.ts';
import { brandResolver } from './http/brand.ts';
import { jsonBody } from './http/body.ts';
import { errorHandler, notFound } from './http/error-handler.ts';
import { requestLog } from './http/request-log.ts';
import { defaultHeaders } from './http/response-headers.ts';
import { publicBaseUrl } from '../db/config.ts';
import { brandRoutes, healthCheck } from './v1/system.ts';
import { orderRoutes } from './v1/orders.ts';
import { refundRoutes } from './v1/refunds.ts';
import { masterDataRoutes } from './v1/master-data.ts';
import { balanceRoutes } from './v1/balance.ts';
import { reportRoutes } from './v1/reports.ts';
import { disbursementRoutes } from './v1/disbursements.ts';
import { disbursementImportRoutes } from './v1/disbursement-import.ts';
import { beneficiaryRoutes } from './v1/beneficiaries.ts';
import { settlementRoutes } from './v1/settlements.ts';
import { legacyOrderRoutes } from './legacy/orders.ts';
import { legacyDisbursementRoutes } from './legacy/disbursements.ts';
import { callbackRoutes } from './callbacks.ts';
import { qrRoutes } from './qr.ts';
import { checkoutRoutes } from './checkout.ts';
import { teamRoutes } from './v1/team.ts';
import { webhookDeliveryRoutes } from './v1/webhook-deliveries.ts';
import { docsRoutes } from './openapi/routes.ts';

export function createApp(ctx: AppContext): Express {
  const app = express();
  app.disable('x-powered-by');
  // The client address (access log, throttling) is the socket's unless TRUST_PROXY names the proxies.
  app.set('trust proxy', ctx.config.TRUST_PROXY);
  app.set('query parser', 'simple');

  app.use(defaultHeaders(publicBaseUrl(ctx.config)));
  app.get('/healthz', healthCheck(ctx));
  app.use(requestLog);
  app.use(jsonBody(ctx.config.BODY_LIMIT));
  app.use(brandResolver(ctx.pool));

  app.use(brandRoutes());
  app.use(docsRoutes());
  app.use(qrRoutes(ctx));
  app.use(checkoutRoutes(ctx));
  app.use(callbackRoutes(ctx));
  // Every other /v1 path needs a merchant: unauthenticated callers learn nothing about routes.
  // A team user's key then needs a role that allows the request (api/http/roles.ts).
  app.use('/v1', requireApiKey(ctx.pool, ctx.throttle), authorizeRole);
  app.use(orderRoutes(ctx));
  app.use(refundRoutes(ctx));
  app.use(masterDataRoutes(ctx));
  app.use(balanceRoutes(ctx));
  app.use(reportRoutes(ctx));
  app.use(disbursementImportRoutes(ctx));
  app.use(disbursementRoutes(ctx));
  app.use(beneficiaryRoutes(ctx));
  app.use(teamRoutes(ctx));
  app.use(settlementRoutes(ctx));
  app.use(webhookDeliveryRoutes(ctx));
  app.use(legacyOrderRoutes(ctx));
  app.use(legacyDisbursementRoutes(ctx));

  app.use(notFound);
  app.use(errorHandler(ctx.config.BODY_LIMIT));
  return app;
}
