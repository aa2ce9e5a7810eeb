// Request bodies: the raw bytes are kept on req.rawBody because signatures (X-Signature HMAC,
// legacy RSA over the body hash, vendor callbacks) are computed over exactly those bytes; the
// JSON is parsed here once, whatever Content-Type says, so a wrong header cannot turn a
// malformed body into an empty one. Multipart bodies are left for the upload routes.
import express, { type NextFunction, type Request, type Response } from 'express';
import { ApiError } from '../../db/errors.ts';

declare module 'express-serve-static-core' {
  interface Request {
    rawBody?: Buffer;
  }
}

export function jsonBody(limit: string) {
  const raw = express.raw({
    type: (req) => !String(req.headers['content-type'] ?? '').startsWith('multipart/'),
    limit,
  });
  return [
    raw,
    (req: Request, _res: Response, next: NextFunction) => {
      if (!Buffer.isBuffer(req.body)) return next();
      const bytes: Buffer = req.body;
      req.rawBody = bytes;
      req.body = undefined;
      if (bytes.length === 0) return next();
      try {
        req.body = JSON.parse(bytes.toString('utf8'));
      } catch {
        return next(new ApiError('INVALID_JSON'));
      }
      const nul = nulPath(req.body);
      if (nul) return next(new ApiError('INVALID_BODY', `${nul.join('.') || 'body'}: must not contain NUL (U+0000) characters`));
      next();
    },
  ];
}

/** Postgres text and jsonb cannot hold U+0000: a body carrying one is refused up front. */
export function nulPath(value: unknown, path: string[] = []): string[] | null {
  if (typeof value === 'string') return value.includes('\u0000') ? path : null;
  if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (key.includes('\u0000')) return [...path, key];
      const found = nulPath(item, [...path, key]);
      if (found) return found;
    }
  }
  return null;
}
