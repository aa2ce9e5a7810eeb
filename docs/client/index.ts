// Kasir's typed client for merchants' servers (docs/client.md): openapi-fetch over the types
// `npm run openapi` generates from the OpenAPI document (./schema.d.ts), so a path, a body, a
// parameter or a field the API does not have fails the merchant's type check, and `error` is
// typed as the envelopes the operation can answer with.
//
// Signatures are computed over the exact bytes sent, never over a re-serialisation: Kasir hashes
// the raw body it receives (docs/webhooks.md; the legacy X-SIGNATURE alike), and two JSON.stringify calls of "the same" object
// need not agree byte for byte (key order, number spelling).
//
// For servers only: the API key, the webhook secret and the legacy private key must never reach
// a browser.
import { createHash, createHmac, createPrivateKey, sign, type KeyObject } from 'node:crypto';
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { components, paths } from './schema.d.ts';

export type { components, operations, paths, webhooks } from './schema.d.ts';

/** The records Kasir answers with, by name: `Schemas['Order']`, `Schemas['Disbursement']`, … */
export type Schemas = components['schemas'];

export type KasirClient = Client<paths>;

export interface KasirClientOptions {
  /** The Kasir API of your brand's domain, e.g. `https://api.kasir.example`. */
  baseUrl: string;
  /** The merchant's (or a team user's) API key, sent as X-API-Key on every request. */
  apiKey?: string;
  /**
   * The merchant's webhook secret, when one is configured: POST /v1/orders is then refused
   * without `X-Signature: sha256=<HMAC-SHA256 of the raw body>`, which the client adds.
   */
  webhookSecret?: string;
  /** Another fetch (a proxy agent, a test double); defaults to the global fetch. */
  fetch?: (input: Request) => Promise<Response>;
  /** Headers sent on every request besides X-API-Key. */
  headers?: Record<string, string>;
}

export function createKasirClient(options: KasirClientOptions): KasirClient {
  const client = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    fetch: options.fetch,
    headers: { ...options.headers, ...(options.apiKey ? { 'X-API-Key': options.apiKey } : {}) },
  });
  if (options.webhookSecret) client.use(signOrderCreation(options.webhookSecret));
  return client;
}

/** `sha256=<lowercase hex HMAC-SHA256 of the raw body, keyed with the webhook secret>`. */
export function orderSignature(webhookSecret: string, rawBody: string | Uint8Array): string {
  return `sha256=${createHmac('sha256', webhookSecret).update(rawBody).digest('hex')}`;
}

/** Adds X-Signature to POST /v1/orders, over the body exactly as the request carries it. */
function signOrderCreation(webhookSecret: string): Middleware {
  return {
    async onRequest({ request, schemaPath }) {
      if (request.method !== 'POST' || schemaPath !== '/v1/orders' || request.headers.has('X-Signature')) return undefined;
      const raw = new Uint8Array(await request.clone().arrayBuffer());
      request.headers.set('X-Signature', orderSignature(webhookSecret, raw));
      return request;
    },
  };
}

// ---------- The legacy API (/api/…: its SHA-512 body signatures and the RSA X-SIGNATURE header)

export interface LegacyCredentials {
  clientId: string;
  clientSecret: string;
  /**
   * The RSA private key whose public half an operator stored for the merchant; disbursements
   * only. A PEM string, or a node:crypto KeyObject (typed by its shape, so that the package's
   * types need no @types/node).
   */
  privateKey?: string | PrivateKeyObject;
}

/** The part of node:crypto's KeyObject the client relies on. */
export interface PrivateKeyObject {
  readonly type: string;
  readonly asymmetricKeyType?: string;
}

const sha512 = (text: string) => createHash('sha512').update(text, 'utf8').digest('hex');

/** POST /api/order/create's `signature`: SHA-512 of `clientId|orderId|totalAmount|clientSecret`. */
export function legacyOrderCreateSignature(credentials: LegacyCredentials, orderId: string, totalAmount: number): string {
  return sha512(`${credentials.clientId}|${orderId}|${totalAmount}|${credentials.clientSecret}`);
}

/** POST /api/order/query's `signature`: SHA-512 of `clientId|orderId|clientSecret`. */
export function legacyOrderQuerySignature(credentials: LegacyCredentials, orderId: string): string {
  return sha512(`${credentials.clientId}|${orderId}|${credentials.clientSecret}`);
}

/**
 * The X-SIGNATURE header of the legacy disbursement calls: base64 of the RSA
 * (PKCS#1 v1.5, SHA-256) signature of `clientId|clientSecret|<lowercase hex SHA-256 of the raw body>`.
 */
export function legacyXSignature(credentials: LegacyCredentials, rawBody: string | Uint8Array): string {
  if (!credentials.privateKey) throw new Error('legacy disbursement calls are signed with the merchant\'s RSA private key');
  const key = typeof credentials.privateKey === 'string' ? createPrivateKey(credentials.privateKey) : credentials.privateKey as KeyObject;
  const bodyHash = createHash('sha256').update(rawBody).digest('hex');
  return sign('sha256', Buffer.from(`${credentials.clientId}|${credentials.clientSecret}|${bodyHash}`, 'utf8'), key).toString('base64');
}

/**
 * The request options of a signed legacy disbursement call: the body serialised once, that text
 * signed and sent as is, and the signature in X-SIGNATURE.
 *
 *   await kasir.POST('/api/disbursement/get-balance', signedLegacyCall(credentials, { clientId }));
 */
export function signedLegacyCall<B extends { clientId: string }>(credentials: LegacyCredentials, body: B) {
  const raw = JSON.stringify(body);
  return {
    body,
    bodySerializer: () => raw,
    params: { header: { 'X-SIGNATURE': legacyXSignature(credentials, raw) } },
  };
}
