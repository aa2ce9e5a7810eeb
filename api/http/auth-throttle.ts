// Throttling of failed authentication, per client address, and of requests per API key.
//
// A client that keeps failing to authenticate (wrong API keys, legacy signatures, RSA
// signatures, vendor callback signatures: one budget for all of them) is answered 429 with
// Retry-After once it has failed AUTH_FAILURE_LIMIT times in a window, before Kasir looks at
// its credentials again: guessing keys costs it time, and Kasir no lookups. Counters live in
// this process (fixed windows in a Map): with several API replicas each counts its own, which
// bounds an attacker to N × the limit (the README says so). The Map is swept as it grows, so a
// flood of distinct addresses cannot grow it without bound.
import type { Request } from 'express';
import { ApiError } from '../../db/errors.ts';
import { observeAuthRefusal, type AuthScheme } from '../../db/metrics.ts';

/** Past this many tracked keys, expired windows are swept before a new one is added. */
const SWEEP_AT = 10_000;

interface Window {
  count: number;
  endsAt: number;
}

/** Fixed windows of `seconds`, counted per key; a key over `limit` must wait for its window to end. */
export function createWindowCounter(limit: number, seconds: number, now: () => number = Date.now) {
  const windows = new Map<string, Window>();
  const current = (key: string): Window | undefined => {
    const w = windows.get(key);
    if (w && w.endsAt <= now()) {
      windows.delete(key);
      return undefined;
    }
    return w;
  };
  return {
    /** Seconds until `key` may go on, or 0 when it is under the limit. */
    waitFor(key: string): number {
      const w = current(key);
      return w && w.count >= limit ? Math.max(1, Math.ceil((w.endsAt - now()) / 1000)) : 0;
    },
    add(key: string): void {
      const w = current(key);
      if (w) {
        w.count++;
        return;
      }
      if (windows.size >= SWEEP_AT) {
        const t = now();
        for (const [k, v] of windows) if (v.endsAt <= t) windows.delete(k);
      }
      windows.set(key, { count: 1, endsAt: now() + seconds * 1000 });
    },
    get size() {
      return windows.size;
    },
  };
}

export interface AuthThrottle {
  /** Refuses (429) a client address that has failed too often in its window. */
  guard(req: Request, scheme: AuthScheme): void;
  /** Counts a failed authentication against the request's client address. */
  failed(req: Request, scheme: AuthScheme): void;
  /** Counts a request of an API key (by its digest); 429 past API_KEY_REQUESTS_PER_MINUTE. */
  perKey(keyDigest: string): void;
}

export function createAuthThrottle(config: { AUTH_FAILURE_LIMIT: number; AUTH_FAILURE_WINDOW_SECONDS: number; API_KEY_REQUESTS_PER_MINUTE: number }): AuthThrottle {
  const failures = createWindowCounter(config.AUTH_FAILURE_LIMIT, config.AUTH_FAILURE_WINDOW_SECONDS);
  const keys = config.API_KEY_REQUESTS_PER_MINUTE > 0 ? createWindowCounter(config.API_KEY_REQUESTS_PER_MINUTE, 60) : null;
  const source = (req: Request) => req.ip ?? req.socket.remoteAddress ?? 'unknown';
  const tooMany = (seconds: number, message: string) => Object.assign(new ApiError('TOO_MANY_REQUESTS', message), { retryAfterSeconds: seconds });
  return {
    guard(req, scheme) {
      const wait = failures.waitFor(source(req));
      if (wait === 0) return;
      observeAuthRefusal(scheme, 'throttled');
      throw tooMany(wait, 'Too many failed authentications from this address; retry after the Retry-After seconds');
    },
    failed(req, scheme) {
      observeAuthRefusal(scheme, 'invalid');
      failures.add(source(req));
    },
    perKey(keyDigest) {
      if (!keys) return;
      const wait = keys.waitFor(keyDigest);
      if (wait > 0) throw tooMany(wait, 'This API key has reached its request limit; retry after the Retry-After seconds');
      keys.add(keyDigest);
    },
  };
}
