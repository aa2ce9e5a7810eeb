-- Beneficiary verification that ends, and the history of CSV imports.
--
-- Verification: every check has a start (verification_requested_at: the create, or the
-- merchant's POST /v1/beneficiaries/{id}/verify) and keeps the last attempt's failure while it
-- is PENDING (verification_last_error), so whatever ends it FAILED (the job's last retry, or
-- the scheduler's deadline sweep for a job chain that died) can record the vendor's reason.
-- Existing rows start at their creation: one stuck PENDING since then is failed by the sweep.
alter table beneficiaries
  add column verification_requested_at timestamptz,
  add column verification_last_error text;
update beneficiaries set verification_requested_at = created_at;
alter table beneficiaries
  alter column verification_requested_at set not null,
  alter column verification_requested_at set default now();
-- The deadline sweep reads only PENDING rows, oldest check first.
create index beneficiaries_pending_verification_idx on beneficiaries (verification_requested_at)
  where verification_status = 'PENDING';

-- Imports: who uploaded the file (the team user, null for the merchant's own key, and the role
-- the key acted with), and each refused row's reason. Imports recorded before this migration
-- have no uploader role and no refused rows stored.
alter table disbursement_imports
  add column uploaded_by_user_id uuid references merchant_users (id),
  add column uploaded_by_role text
    constraint disbursement_imports_uploaded_by_role_check check (uploaded_by_role in ('owner', 'finance', 'ops', 'viewer'));

-- No foreign key to disbursement_imports, as for disbursements.import_id: a file of 100,000
-- rows refused past an exhausted balance writes 100,000 of these in the import's transaction,
-- and the rows commit with their import or not at all.
create table disbursement_import_refusals (
  import_id uuid not null,
  row_number integer not null,
  idempotency_key text not null,
  code text not null,
  message text not null,
  constraint disbursement_import_refusals_pkey primary key (import_id, row_number)
);
