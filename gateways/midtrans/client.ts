// Midtrans transport: Basic auth (the key is the username, the password empty), JSON both ways,
// gateways/http.ts's transport with a timeout, no retries (retrying is the caller's decision: failover or reconcile) and
// no thrown HTTP errors. Core API calls use the server key; Iris calls the creator key (create)
// or the approver key (approve, reject). Logs carry the path, status and time, never a key.
import { logger } from '../../db/logger.ts';
import { observeVendorRateLimited } from '../../db/metrics.ts';
import type { Outcome, VendorRecord } from '../gateway.ts';
import { vendorCall } from '../http.ts';
import { Secret, TOTP } from 'otpauth';

export interface MidtransAnswer {
  status: number;
  /** The parsed JSON body; undefined when the body is not JSON. */
  body: unknown;
}

export interface MidtransCredentials {
  serverKey: string;
  qrisAcquirer: string | undefined;
  iris: { baseUrl: string; creatorKey: string; approverKey: string; merchantKey: string; approverOtp: (() => string) | null } | null;
}

export function midtransCredentials(vendor: VendorRecord): MidtransCredentials {
  const c = vendor.credentials;
  if (!c.serverKey) throw new Error(`vendor ${vendor.code}: credentials.serverKey is required for kind midtrans`);
  const iris =
    c.irisBaseUrl && c.irisCreatorKey && c.irisApproverKey && c.irisMerchantKey
      ? {
          // The Iris base is given with or without its /api/v1 suffix.
          baseUrl: c.irisBaseUrl.replace(/\/+$/, '').replace(/\/api\/v1$/, ''),
          creatorKey: c.irisCreatorKey,
          approverKey: c.irisApproverKey,
          merchantKey: c.irisMerchantKey,
          approverOtp: c.irisApproverTotpSecret ? approverOtp(c.irisApproverTotpSecret) : null,
        }
      : null;
  return { serverKey: c.serverKey, qrisAcquirer: c.qrisAcquirer, iris };
}

/**
 * The Iris approver's current two-factor code: TOTP (RFC 6238; SHA-1, 6 digits, 30 s, as
 * authenticator apps make them) of the secret the approver enrolled, stored sealed with the
 * vendor's other credentials.
 */
export function approverOtp(base32Secret: string): (at?: number) => string {
  const totp = new TOTP({ secret: Secret.fromBase32(base32Secret), algorithm: 'SHA1', digits: 6, period: 30 });
  return (at = Date.now()) => totp.generate({ timestamp: at });
}

const basic = (key: string) => `Basic ${Buffer.from(`${key}:`).toString('base64')}`;

export function createMidtransClient(vendor: VendorRecord, creds: MidtransCredentials, timeoutMs: number) {
  const coreBase = vendor.baseUrl.replace(/\/+$/, '');
  const log = logger.child({ vendor: vendor.code });

  async function send(base: string, method: 'GET' | 'POST', path: string, key: string, payload?: object, headers: Record<string, string> = {}): Promise<Outcome<MidtransAnswer>> {
    // The path may hold an order_id (Kasir's reference) but never a key or an account number.
    const answer = await vendorCall(log, {
      method,
      url: base + path,
      body: payload === undefined ? undefined : JSON.stringify(payload),
      headers: {
        accept: 'application/json',
        ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
        authorization: basic(key),
        ...headers,
      },
      timeoutMs,
    });
    // Midtrans may say 429 in the HTTP status or in the body's status_code.
    if (answer.kind === 'ok' && (answer.value.status === 429 || String((answer.value.body as { status_code?: unknown } | undefined)?.status_code) === '429')) {
      observeVendorRateLimited(vendor.code);
    }
    return answer;
  }

  return {
    core: (method: 'GET' | 'POST', path: string, payload?: object, headers?: Record<string, string>) => send(coreBase, method, path, creds.serverKey, payload, headers),
    /** Iris, as the creator (create, reads) or the approver (approve, reject). */
    iris(role: 'creator' | 'approver', method: 'GET' | 'POST', path: string, payload?: object, headers?: Record<string, string>): Promise<Outcome<MidtransAnswer>> {
      if (!creds.iris) return Promise.resolve({ kind: 'failed', reason: 'no Iris keys configured for this vendor' });
      return send(creds.iris.baseUrl, method, `/api/v1${path}`, role === 'creator' ? creds.iris.creatorKey : creds.iris.approverKey, payload, headers);
    },
  };
}

export type MidtransClient = ReturnType<typeof createMidtransClient>;
