// The error catalogue: every V1 error code of the contract with its HTTP status and default
// message. Services throw ApiError with a code; one middleware (api/http/error-handler.ts)
// writes the envelope. Clients branch on `code`, so codes never change meaning.

export const errorCatalogue = {
  UNAUTHORIZED: [401, 'Missing or invalid API key'],
  INVALID_SIGNATURE: [401, 'X-Signature does not match the request body'],
  MERCHANT_INACTIVE: [403, 'Merchant is suspended or disabled'],
  NOT_WALLET_MERCHANT: [403, 'Merchant settlement type is not WALLET'],
  FORBIDDEN: [403, 'Your role does not allow this operation'],
  INVALID_BODY: [400, 'Request body is invalid'],
  INVALID_JSON: [400, 'Request body is not valid JSON'],
  UNSUPPORTED_PAYMENT_METHOD: [400, 'Only QRIS is supported'],
  IDEMPOTENCY_KEY_REUSED: [400, 'Idempotency-Key was used with a different request body'],
  MERCHANT_ORDER_ID_REUSED: [400, 'merchant_order_id was used with a different amount'],
  INVALID_ID: [400, 'Path parameter is not a valid UUID'],
  BANK_NOT_FOUND: [400, 'bank_short_code matches no bank; GET /v1/banks lists the enabled banks and their short codes'],
  MISSING_BANK_INFO: [400, 'account_number and account_name are required for BANK'],
  MISSING_EWALLET_INFO: [400, 'ewallet_provider and ewallet_phone are required for EWALLET'],
  INVALID_FILE: [400, 'File could not be read'],
  ORDER_NOT_FOUND: [404, 'Order not found'],
  DISBURSEMENT_NOT_FOUND: [404, 'Disbursement not found'],
  BENEFICIARY_NOT_FOUND: [404, 'Beneficiary not found'],
  NOT_FOUND: [404, 'Not found'],
  USER_NOT_FOUND: [404, 'User not found'],
  // Not in the contract's table, whose download answers only 200 or 404 (docs/decisions.md,
  // "Downloading an export that is not done"): the export exists, its file does not (yet).
  EXPORT_NOT_READY: [404, 'The export is still being built; poll GET /v1/reports/exports/{id} (or wait for export.completed) and download once it is COMPLETED'],
  EXPORT_FAILED: [404, 'The export failed and has no file; request a new one'],
  REFUND_NOT_FOUND: [404, 'Refund not found'],
  ORDER_PENDING_CONFIRMATION: [409, 'An earlier attempt is unresolved at the gateway; reconcile before retrying'],
  DUPLICATE_IDEMPOTENCY_KEY: [409, 'A disbursement with this idempotency_key exists'],
  DUPLICATE_EMAIL: [409, 'A user with this email already exists in the team'],
  METHOD_NOT_ALLOWED: [405, 'The path does not take this method; the Allow header lists those it does'],
  INVALID_STATUS: [422, 'Operation not allowed in the current status'],
  AMOUNT_EXCEEDS_ORDER: [422, 'Amount exceeds the remaining refundable amount'],
  BANK_DISABLED: [422, 'Bank is not enabled for disbursement; GET /v1/banks lists the enabled banks'],
  INSUFFICIENT_BALANCE: [422, 'Balance is below amount plus fee'],
  AMOUNT_EXCEEDS_LIMIT: [422, 'Amount is above the per-transaction limit'],
  DAILY_LIMIT_EXCEEDED: [422, 'Daily disbursement limit would be exceeded'],
  LAST_OWNER: [422, 'The last owner can be neither removed nor demoted'],
  // Not in the contract, which has no NAME_MISMATCH beneficiaries: a valid request the state of
  // the saved destination refuses, so 422 beside INSUFFICIENT_BALANCE rather than INVALID_BODY.
  BENEFICIARY_NAME_MISMATCH: [422, 'The bank names another account holder than the beneficiary\'s account_name: delete the beneficiary and save it again with the bank\'s name (verified_name), or send accept_name_mismatch: true to pay it anyway'],
  TOO_MANY_REQUESTS: [429, 'Too many requests; retry after the Retry-After seconds'],
  INTERNAL_ERROR: [500, 'Internal error'],
  NO_VENDOR: [503, 'No gateway is configured for this payment method'],
  VENDOR_ERROR: [503, 'All configured gateways failed'],
  SERVICE_UNAVAILABLE: [503, 'Service temporarily unavailable'],
} as const satisfies Record<string, readonly [number, string]>;

export type ErrorCode = keyof typeof errorCatalogue;

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;

  /** Seconds the client should wait before retrying (a 429's Retry-After). */
  retryAfterSeconds?: number;

  /** Machine-readable particulars, sent as the V1 envelope's error.details (a 409's existing disbursement). */
  details?: Record<string, unknown>;

  /** `status` overrides the catalogue only where HTTP needs a more precise status (413). */
  constructor(code: ErrorCode, message?: string, status?: number) {
    const [catalogued, fallback] = errorCatalogue[code];
    super(message ?? fallback);
    this.code = code;
    this.status = status ?? catalogued;
  }
}

/** BANK_NOT_FOUND naming the code sent and where the known codes are. */
export function bankNotFound(code: string): ApiError {
  return new ApiError('BANK_NOT_FOUND', `bank_short_code: no bank has the short code ${JSON.stringify(code)}; GET /v1/banks lists the enabled banks and their short codes`);
}

/** BANK_DISABLED naming the bank and where the enabled ones are. */
export function bankDisabled(code: string): ApiError {
  return new ApiError('BANK_DISABLED', `Bank ${code} is not enabled for disbursement; GET /v1/banks lists the enabled banks`);
}

/**
 * What a request sent, for an error message: `the string "150000"`, `the number 1500.5`,
 * `null`, `an array`. Long strings are cut: the message names the value, it does not echo a
 * payload.
 */
export function describeReceived(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'nothing';
  if (typeof value === 'string') {
    if (value === '') return 'an empty string';
    const shown = value.length > 40 ? `${value.slice(0, 40)}…` : value;
    return `the string ${JSON.stringify(shown)}${value.length > 40 ? ` (${value.length} characters)` : ''}`;
  }
  if (typeof value === 'number') return `the number ${value}`;
  if (typeof value === 'boolean') return `${value}`;
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return typeof value;
}
