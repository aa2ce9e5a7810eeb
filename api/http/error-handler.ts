// The one place errors become responses. /api/* speaks the legacy envelope, everything else
// the V1 envelope. Anything that is not an ApiError/LegacyError is a bug: the client gets a
// generic 500 and the details go to the log only.
import type { NextFunction, Request, Response } from 'express';
import { logger } from '../../db/logger.ts';
import { isDatabaseUnavailable } from '../../db/pool.ts';
import { LegacyError, legacyMessages } from '../legacy/errors.ts';
import { ApiError } from '../../db/errors.ts';

interface HttpError {
  type?: string;
  status?: number;
}

function isLegacy(req: Request): boolean {
  return req.path.startsWith('/api/');
}

/** Errors raised by body-parser and friends, mapped to the contract's codes. */
function fromHttpError(err: HttpError, limit: string): ApiError | null {
  if (err.type === 'entity.too.large') return new ApiError('INVALID_BODY', `Request body exceeds ${limit}`, 413);
  if (err.type === 'entity.parse.failed') return new ApiError('INVALID_JSON');
  if (typeof err.status === 'number' && err.status >= 400 && err.status < 500) {
    return new ApiError('INVALID_BODY', 'Request body could not be read');
  }
  return null;
}

// A primary failover takes about 10 s (docs/deploy.md, High availability); a client that
// retries every 2 s gets through within a few tries of the new primary, without a stampede.
const DATABASE_RETRY_AFTER_SECONDS = 2;

export function errorHandler(bodyLimit: string) {
  return (err: unknown, req: Request, res: Response, _next: NextFunction) => {
    let known = err instanceof ApiError || err instanceof LegacyError ? err : fromHttpError(err as HttpError, bodyLimit);
    if (!known && isDatabaseUnavailable(err)) {
      // Postgres down, restarting, failing over or cut off: every write is one transaction, so
      // the request was done wholly or not at all, and a retry under the same Idempotency-Key
      // answers the first one if its commit landed just before the connection broke (a 503 can
      // hide a created order; docs/idempotency.md). 503 with Retry-After, not a 500.
      logger.warn({ err, requestId: req.requestId, path: req.path }, 'database unavailable');
      known = new ApiError('SERVICE_UNAVAILABLE',
        'The database is unavailable (restarting or failing over); retry after Retry-After seconds with the same Idempotency-Key: the retry is safe and answers the first request if it was done');
      known.retryAfterSeconds = DATABASE_RETRY_AFTER_SECONDS;
    }
    if (!known) logger.error({ err, requestId: req.requestId, path: req.path }, 'unhandled error');
    if (res.headersSent) return;
    // A route may have set a cacheable Cache-Control (the QR PNG) before failing: no error is cached.
    res.setHeader('Cache-Control', 'no-store');
    if (known instanceof ApiError && known.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(known.retryAfterSeconds));

    if (isLegacy(req)) {
      // A wrong method is 405 with Allow, as on V1, in the legacy envelope (the contract leaves
      // codes other than 400 open); notFound has set Allow.
      const legacy =
        known instanceof LegacyError
          ? known
          : known instanceof ApiError && known.code === 'METHOD_NOT_ALLOWED'
            ? new LegacyError(405, 'Method Not Allowed')
          : known instanceof ApiError && known.status === 429
            ? new LegacyError(429, legacyMessages.tooManyRequests)
            : known instanceof ApiError && known.code === 'SERVICE_UNAVAILABLE'
            ? new LegacyError(503, 'Service Unavailable')

            : known instanceof ApiError && known.status < 500
            ? new LegacyError(known.status === 404 ? 404 : known.status === 401 ? 401 : 400,
                known.code === 'NOT_FOUND' ? 'Not Found' : legacyMessages.invalidParameters)
            : new LegacyError(500, 'Internal Server Error');
      res.status(legacy.code).json({ code: legacy.code, message: legacy.message, data: null });
      return;
    }

    const api = known instanceof ApiError ? known : new ApiError('INTERNAL_ERROR');
    // request_id (also the X-Request-Id header): what a merchant quotes to support, and what
    // finds the request's access line and any "unhandled error" line in the logs.
    res.status(api.status).json({ success: false, error: { code: api.code, message: api.message, request_id: req.requestId, ...(api.details ? { details: api.details } : {}) } });
  };
}

/**
 * No route took the request: 405 with Allow when the path is an endpoint's under another method
 * (POST to a GET-only path, PUT for PATCH), else 404.
 */
export function notFound(req: Request, res: Response, next: NextFunction): void {
  const allowed = allowedMethods((req.app as unknown as { router: { stack: Layer[] } }).router.stack, req.path);
  if (allowed.length === 0) return next(new ApiError('NOT_FOUND', `No endpoint ${req.method} ${req.path}`));
  res.setHeader('Allow', allowed.join(', '));
  next(new ApiError('METHOD_NOT_ALLOWED', `${req.path} does not take ${req.method}; it takes ${allowed.join(', ')}`));
}

interface Layer {
  route?: { methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
  slash?: boolean;
  match(path: string): unknown;
}

/** The methods the routes matching `path` take, HEAD with GET (Express answers HEAD by GET's route). */
function allowedMethods(stack: Layer[], path: string): string[] {
  const methods = new Set<string>();
  for (const layer of stack) {
    if (layer.route) {
      if (!layer.match(path)) continue;
      for (const method of Object.keys(layer.route.methods)) {
        if (method === '_all') continue;
        methods.add(method.toUpperCase());
        if (method === 'get') methods.add('HEAD');
      }
    } else if (layer.handle?.stack && layer.slash) {
      // Routers mounted at the root (app.use(router)) see the whole path.
      for (const method of allowedMethods(layer.handle.stack, path)) methods.add(method);
    }
  }
  return [...methods].sort();
}
