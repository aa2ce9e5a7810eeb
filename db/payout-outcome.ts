// A payout's final word, whoever gives it (a vendor's callback, reconciliation, an operator):
// the one type disbursements, settlement payouts and the payout worker all complete with.
// Its own module because db/payouts.ts imports both payout tables' modules, which need it too.

export type PayoutCompletion =
  | { status: 'SUCCESS'; vendorDisbursementId: string | null }
  | { status: 'FAILED'; vendorDisbursementId: string | null; reason: string };
