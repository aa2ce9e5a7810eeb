// Legacy API errors: the envelope {code, message, data} with the HTTP status equal to code
// (DESIGN.md 6). Messages are the contract's exact texts; clients match on them.
export const legacyMessages = {
  invalidClient: 'Invalid Client ID',
  invalidParameters: 'Invalid request parameters',
  invalidSignature: 'Invalid Signature',
  invalidXSignature: 'Invalid X-SIGNATURE',
  publicKeyNotSet: 'Public Key is not set',
  merchantSettingInvalid: 'Merchant setting is not Valid',
  orderIdUsed: 'Order ID already used',
} as const;

export class LegacyError extends Error {
  readonly code: 400 | 401 | 404 | 500 | 503;

  constructor(code: LegacyError['code'], message: string) {
    super(message);
    this.code = code;
  }
}
