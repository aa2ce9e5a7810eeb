// SNAP BI client: the B2B access token, signed service calls, X-EXTERNAL-ID, and the checks of
// what providers send Kasir (notify signatures, their token requests in HMAC mode).
//
// Invariants:
// - One access token per vendor per process (keyed by code, base URL and client key), shared
//   by every concurrent call; at most one token request is in flight per vendor, and a token is
//   renewed shortly before it expires. A 401 drops the token the call used (only that one, so
//   concurrent 401s cause one refresh) and the call is sent once more with a fresh token.
// - A call that could not get a token never went out: that is a definite failure.
// - X-EXTERNAL-ID is numeric, 32 digits: the Jakarta day (yyyyMMdd) and 24 digits. A call that
//   creates something (QR, refund, transfer) derives them from its operation and Kasir's
//   reference, so a retry of it the same day carries the same id and the provider recognises it
//   (409, "already received"); reads take random ones, as each is a new request.
import { createHash, createHmac, createPrivateKey, createPublicKey, randomBytes, randomInt, sign, timingSafeEqual, verify, type KeyObject } from 'node:crypto';
import type { Logger } from 'pino';
import { logger } from '../../db/logger.ts';
import type { Outcome, VendorRecord } from '../gateway.ts';
import { vendorCall } from '../http.ts';
import { failed, headerOf, ok, unknown } from '../results.ts';
import { isTokenPath, jakartaDay, jakartaTimestamp, minifyJson, notifyStringToSign, parseTimestamp, PATHS, serviceStringToSign, snapAnswer, tokenStringToSign } from './transforms.ts';

/** Requests and notifies signed further from now than this are refused (replays). */
export const MAX_SKEW_SECONDS = 300;
/** The standard's default token lifetime, when a provider's expiresIn cannot be read. */
const DEFAULT_TOKEN_SECONDS = 900;
/** A token is renewed this long before it expires (at most a fifth of its life). */
const RENEW_BEFORE_MS = 60_000;
/** Lifetime of the tokens Kasir issues to providers that sign notifies with HMAC. */
export const ISSUED_TOKEN_SECONDS = 900;


export const sha256Hex = (text: string | Buffer) => createHash('sha256').update(text).digest('hex');

// ---------------------------------------------------------------- credentials

export interface SnapCredentials {
  partnerId: string;
  clientKey: string;
  clientSecret: string;
  privateKey: KeyObject;
  providerPublicKey: KeyObject;
  channelId: string;
  merchantId: string;
  terminalId: string | null;
  notifySignature: 'rsa' | 'hmac';
  qrQueryServiceCode: '47' | '51';
  /**
   * The 4-digit BI branch code appended to the 3-digit bank code, for providers that take the
   * 7-digit form (Midtrans: "3 digit BI Bank Code + 4 digit BI Branch Code"); null: 3 digits.
   */
  bankBranchCode: string | null;
  /** sourceAccountNo of transfers (Midtrans: mandatory, `0000000000` for aggregators); null: not sent. */
  sourceAccountNo: string | null;
}

export function snapCredentials(vendor: VendorRecord): SnapCredentials {
  const c = vendor.credentials;
  for (const field of ['partnerId', 'clientKey', 'clientSecret', 'privateKeyPem', 'providerPublicKeyPem', 'channelId', 'merchantId']) {
    if (!c[field]) throw new Error(`vendor ${vendor.code}: credentials.${field} is required for kind snap`);
  }
  return {
    partnerId: c.partnerId,
    clientKey: c.clientKey,
    clientSecret: c.clientSecret,
    privateKey: createPrivateKey(c.privateKeyPem),
    providerPublicKey: createPublicKey(c.providerPublicKeyPem),
    channelId: c.channelId,
    merchantId: c.merchantId,
    terminalId: c.terminalId || null,
    notifySignature: c.notifySignature === 'hmac' ? 'hmac' : 'rsa',
    qrQueryServiceCode: c.qrQueryServiceCode === '51' ? '51' : '47',
    bankBranchCode: /^\d{4}$/.test(c.bankBranchCode ?? '') ? c.bankBranchCode : null,
    sourceAccountNo: c.sourceAccountNo || null,
  };
}

// ---------------------------------------------------------------- signatures

export const rsaSign = (key: KeyObject, text: string) => sign('sha256', Buffer.from(text), key).toString('base64');
export const hmacSign = (secret: string, text: string) => createHmac('sha512', secret).update(text).digest('base64');

function rsaVerify(key: KeyObject, text: string, signature: string): boolean {
  try {
    return verify('sha256', Buffer.from(text), key, Buffer.from(signature, 'base64'));
  } catch {
    return false;
  }
}

function sameBase64(a: string, b: string): boolean {
  const left = Buffer.from(a, 'base64');
  const right = Buffer.from(b, 'base64');
  return left.length === right.length && left.length > 0 && timingSafeEqual(left, right);
}

// ---------------------------------------------------------------- X-EXTERNAL-ID

/** Deterministic for a create: the same operation on the same reference the same day. */
export function externalIdFor(partnerId: string, operation: string, key: string, at: Date = new Date()): string {
  const digits = BigInt(`0x${sha256Hex(`${partnerId}|${operation}|${key}`)}`).toString().padStart(24, '0').slice(-24);
  return `${jakartaDay(at)}${digits}`;
}

/** A fresh one, for reads. */
export function randomExternalId(at: Date = new Date()): string {
  let digits = '';
  while (digits.length < 24) digits += String(randomInt(0, 1e12)).padStart(12, '0');
  return `${jakartaDay(at)}${digits}`;
}

// ---------------------------------------------------------------- transport

export interface SnapAnswer {
  status: number;
  body: unknown;
}

/** Errors that happen before a single byte reaches the provider are `failed`; after, `unknown`. */
function post(log: Logger, url: string, body: string, headers: Record<string, string>, timeoutMs: number): Promise<Outcome<SnapAnswer>> {
  return vendorCall(log, { method: 'POST', url, body, headers, timeoutMs });
}

// ---------------------------------------------------------------- access token

interface TokenState {
  token: string | null;
  renewAt: number;
  expiresAt: number;
  inflight: Promise<Outcome<{ token: string; expiresInSeconds: number }>> | null;
}

const tokens = new Map<string, TokenState>();

/** A token's lifetime from expiresIn: seconds (the standard's string, or a number), or an instant. */
export function expiresInSecondsOf(value: unknown, now = Date.now()): number {
  if (typeof value === 'number' && Number.isFinite(value) && value > 0) return value;
  if (typeof value === 'string' && /^\d{1,7}$/.test(value) && Number(value) > 0) return Number(value);
  // Some providers (Durianpay) give the expiry instant instead of a duration, in Go's default
  // format ("2024-05-13 08:47:36.452492159 +0000 UTC") or as ISO 8601.
  const go = typeof value === 'string' ? /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(?:\.\d+)? ([+-]\d{2})(\d{2})(?: \w+)?$/.exec(value) : null;
  const at = go ? parseTimestamp(`${go[1]}T${go[2]}${go[3]}:${go[4]}`) : parseTimestamp(value);
  if (at && at.getTime() > now) return Math.floor((at.getTime() - now) / 1000);
  return DEFAULT_TOKEN_SECONDS;
}

export function createSnapClient(vendor: VendorRecord, creds: SnapCredentials, timeoutMs: number) {
  const base = vendor.baseUrl.replace(/\/+$/, '');
  const basePath = new URL(base).pathname.replace(/\/+$/, '');
  const key = `${vendor.code}\u0000${base}\u0000${creds.clientKey}`;
  const log = logger.child({ vendor: vendor.code });

  async function requestToken(): Promise<Outcome<{ token: string; expiresInSeconds: number }>> {
    const timestamp = jakartaTimestamp();
    const body = JSON.stringify({ grantType: 'client_credentials' });
    const started = performance.now();
    const answer = await post(
      log,
      base + PATHS.token,
      body,
      {
        'content-type': 'application/json',
        'x-timestamp': timestamp,
        'x-client-key': creds.clientKey,
        'x-signature': rsaSign(creds.privateKey, tokenStringToSign(creds.clientKey, timestamp)),
      },
      timeoutMs,
    );
    log.debug({ path: PATHS.token, status: answer.kind === 'ok' ? answer.value.status : answer.kind, ms: Math.round(performance.now() - started) }, 'snap token request');
    if (answer.kind !== 'ok') return answer;
    const { status, body: reply } = answer.value;
    const record = typeof reply === 'object' && reply !== null ? (reply as Record<string, unknown>) : {};
    const said = `HTTP ${status}${typeof record.responseCode === 'string' ? ` ${record.responseCode}` : ''}${typeof record.responseMessage === 'string' ? ` ${record.responseMessage.slice(0, 150)}` : ''}`;
    if (status >= 200 && status < 300 && typeof record.accessToken === 'string' && record.accessToken.length > 0 && String(record.responseCode ?? '').startsWith('200')) {
      return ok({ token: record.accessToken, expiresInSeconds: expiresInSecondsOf(record.expiresIn) });
    }
    if (status >= 400 && status < 500) return failed(`access token refused: ${said}`);
    return unknown(`access token not issued: ${said}`);
  }

  /**
   * The vendor's current token, fetched when there is none or it is about to expire. `stale`:
   * the token a call was just refused with, dropped unless another call already replaced it.
   */
  async function accessToken(stale?: string): Promise<Outcome<string>> {
    let state = tokens.get(key);
    if (!state) {
      state = { token: null, renewAt: 0, expiresAt: 0, inflight: null };
      tokens.set(key, state);
    }
    if (stale !== undefined && state.token === stale) state.token = null;
    if (state.token && Date.now() < state.renewAt) return ok(state.token);
    if (!state.inflight) {
      const current = state;
      current.inflight = requestToken().then((outcome) => {
        current.inflight = null;
        if (outcome.kind === 'ok') {
          const lifetimeMs = outcome.value.expiresInSeconds * 1000;
          const now = Date.now();
          current.token = outcome.value.token;
          current.expiresAt = now + lifetimeMs;
          current.renewAt = now + lifetimeMs - Math.min(RENEW_BEFORE_MS, lifetimeMs / 5);
        }
        return outcome;
      });
    }
    const outcome = await state.inflight!;
    if (outcome.kind === 'ok') return ok(outcome.value.token);
    // A renewal that failed early leaves the current token usable until it really expires.
    if (state.token && Date.now() < state.expiresAt) return ok(state.token);
    return outcome;
  }

  /** Forgets the token (ops vendor:check asks for a fresh one). */
  function dropToken(): void {
    tokens.delete(key);
  }

  /**
   * A signed service call. `externalId` gives the X-EXTERNAL-ID of each attempt (the same for a
   * create; a fresh one for a read). A 401 is answered by one new token and one more attempt.
   */
  async function call(path: string, payload: object, externalId: () => string): Promise<Outcome<SnapAnswer>> {
    const body = JSON.stringify(payload);
    const bodyHash = sha256Hex(minifyJson(body));
    const signedPath = basePath + path;
    const attempt = async (token: string) => {
      const timestamp = jakartaTimestamp();
      const started = performance.now();
      const answer = await post(
        log,
        base + path,
        body,
        {
          'content-type': 'application/json',
          authorization: `Bearer ${token}`,
          'x-timestamp': timestamp,
          'x-signature': hmacSign(creds.clientSecret, serviceStringToSign('POST', signedPath, token, bodyHash, timestamp)),
          'x-partner-id': creds.partnerId,
          'x-external-id': externalId(),
          'channel-id': creds.channelId,
        },
        timeoutMs,
      );
      log.debug({ path, status: answer.kind === 'ok' ? answer.value.status : answer.kind, ms: Math.round(performance.now() - started) }, 'snap call');
      return answer;
    };
    const first = await accessToken();
    // Without a token nothing was sent: whatever stopped the token, the call surely did nothing.
    if (first.kind !== 'ok') return failed(`no access token: ${first.reason}`);
    const answer = await attempt(first.value);
    if (answer.kind !== 'ok' || answer.value.status !== 401) return answer;
    const fresh = await accessToken(first.value);
    if (fresh.kind !== 'ok') return answer;
    log.info({ path }, 'snap call refused with 401; sent again with a new token');
    return attempt(fresh.value);
  }

  return { accessToken, dropToken, call, basePath };
}

export type SnapClient = ReturnType<typeof createSnapClient>;

// ---------------------------------------------------------------- what providers send Kasir

export type Headers = Record<string, string | string[] | undefined>;


function freshTimestamp(value: string | null): string | null {
  const at = parseTimestamp(value);
  if (!at || Math.abs(Date.now() - at.getTime()) > MAX_SKEW_SECONDS * 1000) return null;
  return value;
}

/**
 * Tokens Kasir issues to a provider that signs notifies with HMAC (it fetches one from Kasir's
 * own /v1.0/access-token/b2b first). Stateless, so every API process can check them:
 * `<expiry unix seconds>.<nonce>.<mac>`, the mac keyed by the vendor's client secret.
 */
function tokenMac(creds: SnapCredentials, payload: string): string {
  const macKey = createHash('sha256').update(`kasir snap issued token\u0000${creds.clientSecret}`).digest();
  return createHmac('sha256', macKey).update(payload).digest('base64url');
}

export function issueToken(creds: SnapCredentials, now = Date.now()): string {
  const payload = `${Math.floor(now / 1000) + ISSUED_TOKEN_SECONDS}.${randomBytes(12).toString('base64url')}`;
  return `${payload}.${tokenMac(creds, payload)}`;
}

export function isIssuedToken(creds: SnapCredentials, token: string, now = Date.now()): boolean {
  const match = /^(\d{1,12})\.([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!match || Number(match[1]) * 1000 <= now) return false;
  const expected = Buffer.from(tokenMac(creds, `${match[1]}.${match[2]}`));
  const given = Buffer.from(match[3]);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/**
 * Whether a notify is the provider's: RSA over `POST:path:hash:timestamp` with its public key,
 * or (hmac) HMAC-SHA512 with the client secret over `POST:path:token:hash:timestamp` with a
 * token Kasir issued. Providers differ on the signed path: the SNAP path ('/v1.0/qr/qr-mpm-notify',
 * Midtrans) or the full path of Kasir's URL (DOKU); both are accepted.
 */
export function verifyNotify(creds: SnapCredentials, headers: Headers, rawBody: Buffer, paths: string[]): boolean {
  const timestamp = freshTimestamp(headerOf(headers, 'x-timestamp'));
  const signature = headerOf(headers, 'x-signature');
  if (!timestamp || !signature) return false;
  const bodyHash = sha256Hex(minifyJson(rawBody.toString('utf8')));
  if (creds.notifySignature === 'rsa') {
    return paths.some((path) => rsaVerify(creds.providerPublicKey, notifyStringToSign(path, bodyHash, timestamp), signature));
  }
  const token = /^Bearer (\S+)$/.exec(headerOf(headers, 'authorization') ?? '')?.[1];
  if (!token || !isIssuedToken(creds, token)) return false;
  return paths.some((path) => sameBase64(hmacSign(creds.clientSecret, serviceStringToSign('POST', path, token, bodyHash, timestamp)), signature));
}

/**
 * A provider's B2B token request to Kasir (HMAC notify mode): X-CLIENT-KEY is the client key
 * the provider issued Kasir, X-SIGNATURE its RSA signature over `clientKey|timestamp`.
 */
/**
 * What Kasir answers a caller on a SNAP path it cannot verify, whoever the code names: a known
 * SNAP vendor's refusal of a caller with no key of its, in the same shape. An unknown code, or
 * another kind of vendor, answers exactly this too, so a SNAP path cannot tell a vendor code
 * from a made-up one.
 */
export function refuseUnverifiable(path: string, headers: Headers, rawBody: Buffer): { status: number; body: Record<string, string> } {
  if (!isTokenPath(path)) return snapAnswer(path, 'bad_signature');
  // No client key or partner id matches: the token request is refused as a known vendor refuses a stranger.
  const stranger = { partnerId: '', clientKey: '' } as SnapCredentials;
  return answerTokenRequest(stranger, headers, rawBody);
}

export function answerTokenRequest(creds: SnapCredentials, headers: Headers, rawBody: Buffer): { status: number; body: Record<string, string> } {
  const refuse = (status: number, caseCode: string, message: string) => ({ status, body: { responseCode: `${status}73${caseCode}`, responseMessage: message } });
  const timestamp = freshTimestamp(headerOf(headers, 'x-timestamp'));
  const clientKey = headerOf(headers, 'x-client-key');
  const signature = headerOf(headers, 'x-signature');
  if (!timestamp) return refuse(400, '01', 'Invalid Field Format X-TIMESTAMP');
  if (!clientKey || !signature) return refuse(400, '02', 'Invalid Mandatory Field X-CLIENT-KEY/X-SIGNATURE');
  if (clientKey !== creds.clientKey && clientKey !== creds.partnerId) return refuse(401, '00', 'Unauthorized. Unknown Client');
  if (!rsaVerify(creds.providerPublicKey, tokenStringToSign(clientKey, timestamp), signature)) return refuse(401, '00', 'Unauthorized. Signature');
  let grant: unknown;
  try {
    const body = JSON.parse(rawBody.toString('utf8')) as Record<string, unknown>;
    grant = body.grantType ?? body.grant_type;
  } catch {
    grant = undefined;
  }
  if (grant !== 'client_credentials') return refuse(400, '02', 'Invalid Mandatory Field grantType');
  return {
    status: 200,
    body: { responseCode: '2007300', responseMessage: 'Successful', accessToken: issueToken(creds), tokenType: 'Bearer', expiresIn: String(ISSUED_TOKEN_SECONDS) },
  };
}
