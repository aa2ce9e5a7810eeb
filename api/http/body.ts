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
      // Checked on the bytes, before parsing: a body of 50,000 '[' must cost no more than a
      // scan (this runs for every route, before authentication).
      if (nestingDepth(bytes) > MAX_DEPTH) return next(new ApiError('INVALID_BODY', `body: nested deeper than ${MAX_DEPTH} levels`));
      try {
        req.body = JSON.parse(bytes.toString('utf8'));
      } catch {
        return next(new ApiError('INVALID_JSON'));
      }
      // JSON cannot carry a raw NUL inside a string, only the escape: no escape, nothing to look for.
      const nul = bytes.includes(NUL_ESCAPE) ? nulPath(req.body) : null;
      if (nul) return next(new ApiError('INVALID_BODY', `${nul.join('.') || 'body'}: must not contain NUL (U+0000) characters`));
      next();
    },
  ];
}

/** Deeper than any body of the API or of a vendor callback nests. */
export const MAX_DEPTH = 32;
const NUL_ESCAPE = Buffer.from('\\u0000');

/** The deepest nesting of arrays and objects in JSON text, strings skipped; stops once past MAX_DEPTH. */
export function nestingDepth(bytes: Buffer): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i];
    if (inString) {
      if (c === 0x5c) i++; // a backslash escapes the next byte
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > deepest && (deepest = depth) > MAX_DEPTH) return deepest;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return deepest;
}

/**
 * Postgres text and jsonb cannot hold U+0000: a body carrying one is refused up front. The path
 * of the first one found; iterative, so no body can exhaust the stack.
 */
export function nulPath(root: unknown): string[] | null {
  const pending: Array<{ value: unknown; path: string[] }> = [{ value: root, path: [] }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const { value, path } = next;
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return path;
    } else if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value);
      // Pushed in reverse so the first key is looked at first, as a reader would expect.
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, item] = entries[i];
        if (key.includes('\u0000')) return [...path, key];
        pending.push({ value: item, path: [...path, key] });
      }
    }
  }
  return null;
}
