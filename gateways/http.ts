// The one HTTP transport of every vendor adapter: a JSON request with a timeout and no retry
// (retrying is the caller's decision, failover or reconcile, never the transport's), no
// redirects, and an Outcome for a request that got no answer that says whether it surely did
// not reach the vendor (failed) or may have (unknown).
//
// node:http(s) with one keep-alive agent per vendor origin, not got (docs/decisions.md, "Vendor
// transport"): got's per-request work was a fifth of the vendor worker's CPU per order, and a
// vendor call needs none of what it adds (retries, redirects, hooks, decompression).
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
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

/** Above any answer Kasir reads (a page of transactions, a day's statement): a bigger one is not read. */
const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

/**
 * Keep-alive agents, one per vendor origin: a connection is reused by the next call to the same
 * vendor. An idle connection is closed after a second or so less than the vendor's Keep-Alive
 * hint (Node's agent reads it), so a call seldom meets a connection the vendor has just closed;
 * when it does, the reset is `unknown` like any other (classifyTransportError), never a failure.
 */
const agents = new Map<string, HttpAgent | HttpsAgent>();
function agentFor(url: URL): HttpAgent | HttpsAgent {
  let agent = agents.get(url.origin);
  if (!agent) {
    const options = { keepAlive: true, maxSockets: 64, maxFreeSockets: 16, scheduling: 'lifo' as const };
    agent = url.protocol === 'https:' ? new HttpsAgent(options) : new HttpAgent(options);
    agents.set(url.origin, agent);
  }
  return agent;
}

/** Why a request got no answer, with what classifyTransportError needs: did a connection exist? */
class NoAnswer extends Error {
  readonly code: string;
  readonly timings: { connect?: number };
  constructor(code: string, message: string, connected: boolean) {
    super(message);
    this.code = code;
    this.timings = connected ? { connect: 1 } : {};
  }
}

function exchange(r: VendorRequest, url: URL): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const headers: Record<string, string | number> = { ...r.headers };
    if (r.body !== undefined) headers['content-length'] = Buffer.byteLength(r.body);
    // A reused keep-alive connection is connected already; a new one says so when it is.
    let connected = false;
    const request = send(url, { method: r.method, agent: agentFor(url), headers }, (response: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_ANSWER_BYTES) request.destroy(new NoAnswer('EANSWERTOOLARGE', `an answer over ${MAX_ANSWER_BYTES} bytes`, true));
        else chunks.push(chunk);
      });
      response.on('error', reject);
      response.on('end', () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
    });
    request.on('socket', (socket) => {
      if (!socket.connecting) connected = true;
      else socket.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', () => (connected = true));
    });
    const timer = setTimeout(() => request.destroy(new NoAnswer('ETIMEDOUT', `no answer within ${r.timeoutMs} ms`, connected)), r.timeoutMs);
    request.on('error', reject);
    request.on('close', () => clearTimeout(timer));
    request.end(r.body);
  });
}

/** One call. `log` gets a debug line with the path (never the query, headers or body: they carry keys and accounts). */
export async function vendorCall(log: Logger, r: VendorRequest): Promise<Outcome<HttpAnswer>> {
  const started = performance.now();
  const url = new URL(r.url);
  try {
    // Iris's statement takes its dates as a JSON body on a GET (gateways/midtrans/report.ts):
    // node:http sends a GET's body like any other.
    const response = await exchange(r, url);
    log.debug({ method: r.method, path: url.pathname, status: response.status, ms: Math.round(performance.now() - started) }, 'vendor call');
    let body: unknown;
    try {
      body = JSON.parse(response.text);
    } catch {
      body = undefined;
    }
    return { kind: 'ok', value: { status: response.status, body } };
  } catch (error) {
    const outcome = classifyTransportError(error as { code?: string; timings?: { connect?: number } });
    log.debug({ method: r.method, path: url.pathname, error: (error as { code?: string }).code, outcome: outcome.kind, ms: Math.round(performance.now() - started) }, 'vendor call without an answer');
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
