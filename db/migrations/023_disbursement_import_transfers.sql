-- One ledger transfer per CSV import instead of one per row (issue 17): DISBURSEMENT_IMPORT
-- moves the accepted rows' total debit from the WALLET to DISBURSEMENTS_IN_FLIGHT and refers to
-- the import (reference_type DISBURSEMENT_IMPORT, reference_id disbursement_imports.id). Each
-- imported disbursement still completes (DISBURSEMENT_COMPLETED) or is reversed
-- (DISBURSEMENT_REVERSAL) on its own, from DISBURSEMENTS_IN_FLIGHT, exactly as one created
-- through the JSON endpoint. Imports made before this migration keep their per-row
-- DISBURSEMENT transfers; the ledger audit accepts either form of a disbursement's debit.
alter table ledger_transfers drop constraint ledger_transfers_kind_check;
alter table ledger_transfers add constraint ledger_transfers_kind_check check (kind in
  ('ORDER_PAYMENT', 'DISBURSEMENT', 'DISBURSEMENT_IMPORT', 'DISBURSEMENT_COMPLETED', 'DISBURSEMENT_REVERSAL', 'ADJUSTMENT',
   'REFUND', 'REFUND_COMPLETED', 'REFUND_REVERSAL', 'SETTLEMENT_PAYOUT', 'SETTLEMENT_COMPLETED', 'SETTLEMENT_REVERSAL'));

alter table ledger_transfers drop constraint ledger_transfers_reference_type_check;
alter table ledger_transfers add constraint ledger_transfers_reference_type_check check (reference_type in
  ('ORDER', 'DISBURSEMENT', 'DISBURSEMENT_IMPORT', 'ADJUSTMENT', 'REFUND', 'SETTLEMENT'));
