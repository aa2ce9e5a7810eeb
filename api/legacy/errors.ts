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
  bankUnusable: 'Bank Cannot be used for Disbursement',
  insufficientBalance: 'Insufficient Balance',
  amountAboveLimit: 'Maximum Request Amount Exceeded',
  invalidEwalletCode: 'Invalid ewalletCode.',
  danaMinimum: 'Minimum requestAmount for DANA is 20000.',
  // Not in the contract (docs/decisions.md "Legacy disbursements"): worded like its neighbours.
  dailyLimitExceeded: 'Daily Disbursement Limit Exceeded',
  notWalletMerchant: 'Disbursement is not available: merchant settlement type is not WALLET',
  // Not in the contract either: the throttle's answer (HTTP 429 with Retry-After).
  tooManyRequests: 'Too Many Requests',
} as const;

export const disbursementExists = (orderId: string) => `Disbursement with orderId ${orderId} Already Exists.`;
export const disbursementNotFound = (orderId: string) => `Disbursement with orderId ${orderId} not found.`;

export class LegacyError extends Error {
  readonly code: 400 | 401 | 404 | 405 | 429 | 500 | 503;

  constructor(code: LegacyError['code'], message: string) {
    super(message);
    this.code = code;
  }
}
