// Throttling of failed authentication, per client network, and of requests per API key.
//
// A client that keeps failing to authenticate (wrong API keys, legacy signatures, RSA
// signatures: one budget for those) is answered 429 with Retry-After instead of 401 once it has
// failed AUTH_FAILURE_LIMIT times in a window: guessing keys costs it time. A request whose
// credential is valid is never throttled, whoever else shares its address: behind a load
// balancer without TRUST_PROXY every client has the balancer's address, and a stranger's wrong
// keys must not lock merchants out. Vendor callbacks have a budget of their own, so a flood of
// forged callbacks does not spend the merchants' budget; only a callback whose signature fails
// counts (an authentic one Kasir does not act on does not).
//
// Addresses are counted by network: an IPv4 address as it is (an IPv4-mapped IPv6 address is
// the IPv4 one), an IPv6 address by its /64, which is what one subscriber holds, in one
// canonical spelling. Counters live in this process (fixed windows): with several API replicas
// each counts its own, which bounds an attacker to N × the limit. A counter holds at most
// MAX_TRACKED windows, so a flood of addresses costs O(1) per request and bounded memory; past
// that it drops windows still under the limit first, oldest first, and a spent window only
// when every window it holds is spent: a client that spent its budget cannot buy it back by
// making up new addresses (it would have to spend MAX_TRACKED budgets first).
import { isIPv4, isIPv6 } from 'node:net';
import type { Request } from 'express';
import { ApiError } from '../../db/errors.ts';
import { observeAuthRefusal, type AuthScheme } from '../../db/metrics.ts';

/** Most windows one counter tracks; past it the oldest is dropped for each new one. */
export const MAX_TRACKED = 10_000;

interface Window {
  count: number;
  endsAt: number;
}

/**
 * Fixed windows of `seconds`, counted per key; a key at `limit` must wait for its window to
 * end. Windows under the limit and spent ones are kept apart, each Map in insertion order (a
 * window enters `counting` when it starts and moves to `spent` when it reaches the limit), so
 * the window to drop is always a first entry: eviction is one step.
 */
export function createWindowCounter(limit: number, seconds: number, now: () => number = Date.now, maxTracked = MAX_TRACKED) {
  const counting = new Map<string, Window>();
  const spent = new Map<string, Window>();
  const current = (key: string): Window | undefined => {
    const w = counting.get(key) ?? spent.get(key);
    if (w && w.endsAt <= now()) {
      counting.delete(key);
      spent.delete(key);
      return undefined;
    }
    return w;
  };
  const oldest = (windows: Map<string, Window>) => windows.keys().next().value!;
  const evictOne = () => {
    // The oldest spent window first if its time is up (it frees nothing anyone waits for), then
    // the oldest still counting, and a spent one that is still running only when none counts.
    const first = spent.values().next().value;
    if (first && first.endsAt <= now()) spent.delete(oldest(spent));
    else if (counting.size > 0) counting.delete(oldest(counting));
    else spent.delete(oldest(spent));
  };
  return {
    /** Seconds until `key` may go on, or 0 when it is under the limit. */
    waitFor(key: string): number {
      const w = current(key);
      return w && w.count >= limit ? Math.max(1, Math.ceil((w.endsAt - now()) / 1000)) : 0;
    },
    add(key: string): void {
      let w = current(key);
      if (!w) {
        while (counting.size + spent.size >= maxTracked) evictOne();
        w = { count: 0, endsAt: now() + seconds * 1000 };
        counting.set(key, w);
      }
      w.count++;
      if (w.count >= limit && counting.delete(key)) spent.set(key, w);
    },
    get size() {
      return counting.size + spent.size;
    },
  };
}

/** The eight 16-bit groups of an IPv6 address (zone dropped), or null when it is not one. */
function ipv6Groups(text: string): number[] | null {
  const address = text.split('%')[0];
  if (!isIPv6(address)) return null;
  const [head, tail] = address.includes('::') ? address.split('::') : [address, null];
  const parse = (part: string) => {
    if (part === '') return [];
    const out: number[] = [];
    for (const piece of part.split(':')) {
      if (piece.includes('.')) {
        const [a, b, c, d] = piece.split('.').map(Number);
        out.push((a << 8) | b, (c << 8) | d);
      } else {
        out.push(parseInt(piece, 16));
      }
    }
    return out;
  };
  const front = parse(head);
  if (tail === null) return front;
  const back = parse(tail);
  return [...front, ...new Array(8 - front.length - back.length).fill(0), ...back];
}

/**
 * The network a client address is counted under: `4:a.b.c.d` for IPv4 (also when written as an
 * IPv4-mapped IPv6 address), `6:xxxx:xxxx:xxxx:xxxx::/64` for IPv6. Anything else (no address,
 * a unix socket) is counted as itself.
 */
export function clientNetwork(address: string | undefined): string {
  if (!address) return 'unknown';
  if (isIPv4(address)) return `4:${address}`;
  const groups = ipv6Groups(address);
  if (!groups) return `?:${address}`;
  // ::ffff:a.b.c.d is an IPv4 client reaching a dual-stack socket.
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return `4:${groups[6] >> 8}.${groups[6] & 255}.${groups[7] >> 8}.${groups[7] & 255}`;
  }
  return `6:${groups.slice(0, 4).map((g) => g.toString(16)).join(':')}::/64`;
}

export interface AuthThrottle {
  /**
   * A failed authentication from this request's client network, counted in `budget` ('auth'
   * for API keys and legacy signatures, 'callback' for vendor callbacks). Throws 429 with
   * Retry-After when the budget was already spent; otherwise returns, and the caller refuses
   * as it would have.
   */
  failed(req: Request, scheme: AuthScheme, budget?: string): void;
  /** Counts a request of an API key (by its digest); 429 past API_KEY_REQUESTS_PER_MINUTE. */
  perKey(keyDigest: string): void;
}

export function createAuthThrottle(config: { AUTH_FAILURE_LIMIT: number; AUTH_FAILURE_WINDOW_SECONDS: number; API_KEY_REQUESTS_PER_MINUTE: number }): AuthThrottle {
  const failures = createWindowCounter(config.AUTH_FAILURE_LIMIT, config.AUTH_FAILURE_WINDOW_SECONDS);
  const keys = config.API_KEY_REQUESTS_PER_MINUTE > 0 ? createWindowCounter(config.API_KEY_REQUESTS_PER_MINUTE, 60) : null;
  const tooMany = (seconds: number, message: string) => Object.assign(new ApiError('TOO_MANY_REQUESTS', message), { retryAfterSeconds: seconds });
  return {
    failed(req, scheme, budget = 'auth') {
      const key = `${budget}|${clientNetwork(req.ip ?? req.socket.remoteAddress)}`;
      const wait = failures.waitFor(key);
      if (wait > 0) {
        observeAuthRefusal(scheme, 'throttled');
        throw tooMany(wait, 'Too many failed authentications from this address; retry after the Retry-After seconds');
      }
      observeAuthRefusal(scheme, 'invalid');
      failures.add(key);
    },
    perKey(keyDigest) {
      if (!keys) return;
      const wait = keys.waitFor(keyDigest);
      if (wait > 0) throw tooMany(wait, 'This API key has reached its request limit; retry after the Retry-After seconds');
      keys.add(keyDigest);
    },
  };
}
