-- An account-name check that protects the payout. A beneficiary whose bank names another holder
-- than the one saved is NAME_MISMATCH (the bank's name in verified_name, why in
-- verification_failure), not VERIFIED; a disbursement to it, or to entered details whose
-- inquiry disagrees, is refused unless its request accepts the mismatch (accept_name_mismatch).
alter table beneficiaries drop constraint beneficiaries_verification_status_check;
alter table beneficiaries add constraint beneficiaries_verification_status_check
  check (verification_status in ('PENDING', 'VERIFIED', 'NAME_MISMATCH', 'FAILED'));
alter table beneficiaries drop constraint beneficiaries_verification_check;
alter table beneficiaries add constraint beneficiaries_verification_check check (
  (verification_status in ('VERIFIED', 'NAME_MISMATCH')) = (verified_name is not null)
  and (verification_status in ('FAILED', 'NAME_MISMATCH')) = (verification_failure is not null));

alter table disbursements add column accept_name_mismatch boolean not null default false;
