-- A payout the vendor reversed after it succeeded (Xendit's payout.reversed: the bank bounced
-- the transfer and the money came back to the platform's vendor balance; issue 36 finding 3).
-- DISBURSEMENT_RETURNED gives the merchant back what DISBURSEMENT_COMPLETED took: VENDOR_CLEARING
-- −request_amount, FEE_REVENUE −fee, WALLET +total_debit. Like every transfer it is unique per
-- (kind, reference), so a disbursement is returned at most once (docs/money.md).
alter table ledger_transfers drop constraint ledger_transfers_kind_check;
alter table ledger_transfers add constraint ledger_transfers_kind_check check (kind in
  ('ORDER_PAYMENT', 'DISBURSEMENT', 'DISBURSEMENT_IMPORT', 'DISBURSEMENT_COMPLETED', 'DISBURSEMENT_REVERSAL', 'DISBURSEMENT_RETURNED',
   'ADJUSTMENT', 'REFUND', 'REFUND_COMPLETED', 'REFUND_REVERSAL', 'SETTLEMENT_PAYOUT', 'SETTLEMENT_COMPLETED', 'SETTLEMENT_REVERSAL'));
