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
      const text = bytes.toString('utf8');
      try {
        req.body = JSON.parse(text);
      } catch (err) {
        return next(new ApiError('INVALID_JSON', `Request body is not valid JSON: ${jsonProblem(text, err)}`));
      }
      // JSON cannot carry a raw NUL inside a string, only the escape: no escape, nothing to look for.
      const nul = bytes.includes(NUL_ESCAPE) ? nulPath(req.body) : null;
      if (nul) return next(new ApiError('INVALID_BODY', `${nul.join('.') || 'body'}: must not contain NUL (U+0000) characters`));
      next();
    },
  ];
}

/**
 * Where and why JSON.parse refused `text`: "Expected ',' or '}' after property value at line 1,
 * column 7". V8 gives the position for most errors; for an unexpected token it quotes the body
 * instead (never echoed back here), and the position is found by scanning.
 */
export function jsonProblem(text: string, err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const positioned = /^(.*?) (?:in JSON )?at position (\d+)/s.exec(message);
  const token = /^(Unexpected token .+?), ".*" is not valid JSON$/s.exec(message);
  const reason = positioned?.[1] ?? token?.[1] ?? (message.startsWith('Unexpected end of JSON input') ? 'Unexpected end of JSON input' : 'Not JSON');
  const position = positioned ? Number(positioned[2]) : firstErrorAt(text);
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < position; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return `${reason} at line ${line}, column ${position - lineStart + 1}`;
}

/** The index of the first character that cannot continue a JSON text (text.length: it ended early). */
function firstErrorAt(s: string): number {
  let i = 0;
  const fail = (): never => {
    throw i;
  };
  const ws = () => {
    while (s[i] === ' ' || s[i] === '\t' || s[i] === '\n' || s[i] === '\r') i++;
  };
  const string = () => {
    i++;
    while (i < s.length && s[i] !== '"') {
      if (s.charCodeAt(i) < 0x20) fail();
      i += s[i] === '\\' ? 2 : 1;
    }
    if (i >= s.length) fail();
    i++;
  };
  const number = () => {
    const match = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(s.slice(i, i + 400));
    if (!match) fail();
    i += match![0].length;
  };
  const value = (): void => {
    ws();
    const c = s[i];
    if (c === '{' || c === '[') {
      const close = c === '{' ? '}' : ']';
      i++;
      ws();
      if (s[i] === close) {
        i++;
        return;
      }
      for (;;) {
        if (c === '{') {
          ws();
          if (s[i] !== '"') fail();
          string();
          ws();
          if (s[i] !== ':') fail();
          i++;
        }
        value();
        ws();
        if (s[i] === ',') i++;
        else if (s[i] === close) {
          i++;
          return;
        } else fail();
      }
    }
    if (c === '"') return string();
    if (c === '-' || (c >= '0' && c <= '9')) return number();
    for (const literal of ['true', 'false', 'null']) {
      if (c !== literal[0]) continue;
      for (const expected of literal) {
        if (s[i] !== expected) fail();
        i++;
      }
      return;
    }
    fail();
  };
  try {
    value();
    ws();
    return i < s.length ? i : s.length;
  } catch (at) {
    return Math.min(at as number, s.length);
  }
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
  // Each entry links to its parent's instead of copying the path: a body nested n levels deep
  // costs n steps, not n² (copying the path at each level took minutes at 100,000 levels).
  type Step = { key: string; parent: Step | null };
  const pathOf = (step: Step | null): string[] => {
    const keys: string[] = [];
    for (let s = step; s; s = s.parent) keys.push(s.key);
    return keys.reverse();
  };
  const pending: Array<{ value: unknown; at: Step | null }> = [{ value: root, at: null }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const { value, at } = next;
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return pathOf(at);
    } else if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value);
      // Pushed in reverse so the first key is looked at first, as a reader would expect.
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, item] = entries[i];
        if (key.includes('\u0000')) return pathOf({ key, parent: at });
        pending.push({ value: item, at: { key, parent: at } });
      }
    }
  }
  return null;
}
