// The one HTTP transport of every vendor adapter: a JSON request with a timeout and no retry
// (retrying is the caller's decision, failover or reconcile, never the transport's), no
// redirects, and an Outcome for a request that got no answer that says whether it surely did
// not reach the vendor (failed) or may have (unknown).
import got from 'got';
import type { Logger } from 'pino';
import type { Outcome } from './gateway.ts';

/** What the vendor answered: its HTTP status and the body parsed as JSON (undefined when not JSON). */
export interface HttpAnswer {
  status: number;
  body: unknown;
}

/** Errors that happen before a single byte reaches the vendor. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH']);

/** Classifies a request that got no HTTP answer: did it surely not reach the vendor? */
export function classifyTransportError(error: { code?: string; timings?: { connect?: number } }): Outcome<never> {
  const code = error.code ?? 'UNKNOWN';
  if (NOT_SENT.has(code)) return { kind: 'failed', reason: `connection failed before sending (${code})` };
  // A timeout before the TCP connection existed sent nothing; after it, the vendor may be working.
  if (code === 'ETIMEDOUT' && error.timings && error.timings.connect === undefined) return { kind: 'failed', reason: 'timed out before connecting' };
  return { kind: 'unknown', reason: `no answer (${code})` };
}

export interface VendorRequest {
  method: 'GET' | 'POST';
  url: string;
  headers?: Record<string, string>;
  /** Sent as is (the caller signs these exact bytes when its vendor wants a signature). */
  body?: string;
  timeoutMs: number;
}

/** One call. `log` gets a debug line with the path (never the query, headers or body: they carry keys and accounts). */
export async function vendorCall(log: Logger, r: VendorRequest): Promise<Outcome<HttpAnswer>> {
  const started = performance.now();
  const path = new URL(r.url).pathname;
  try {
    const response = await got(r.url, {
      method: r.method,
      body: r.body,
      // Iris's statement takes its dates as a JSON body on a GET (gateways/midtrans/report.ts).
      allowGetBody: r.method === 'GET' && r.body !== undefined,
      headers: r.headers,
      timeout: { request: r.timeoutMs },
      retry: { limit: 0 },
      throwHttpErrors: false,
      followRedirect: false,
    });
    log.debug({ method: r.method, path, status: response.statusCode, ms: Math.round(performance.now() - started) }, 'vendor call');
    let body: unknown;
    try {
      body = JSON.parse(response.body);
    } catch {
      body = undefined;
    }
    return { kind: 'ok', value: { status: response.statusCode, body } };
  } catch (error) {
    const outcome = classifyTransportError(error as { code?: string; timings?: { connect?: number } });
    log.debug({ method: r.method, path, error: (error as { code?: string }).code, outcome: outcome.kind, ms: Math.round(performance.now() - started) }, 'vendor call without an answer');
    return outcome;
  }
}

/**
 * The common reading of an answer: 2xx is parsed (an answer `parse` cannot read is unknown: the
 * vendor may have acted), 4xx is failed (it did nothing), anything else unknown. `reason` names
 * the vendor's error from its body.
 */
export function interpretAnswer<T>(answer: HttpAnswer, parse: (body: unknown) => T | null, reason: (answer: HttpAnswer) => string): Outcome<T> {
  const { status, body } = answer;
  if (status >= 200 && status < 300) {
    const value = parse(body);
    return value === null ? { kind: 'unknown', reason: `unreadable HTTP ${status} answer` } : { kind: 'ok', value };
  }
  return status >= 400 && status < 500 ? { kind: 'failed', reason: reason(answer) } : { kind: 'unknown', reason: reason(answer) };
}
