-- Beneficiaries: a merchant's saved payout destinations (spec 2.4, 4.5), each verified once by
-- an account-name inquiry at a vendor (PENDING → VERIFIED | FAILED). Deleting is a soft
-- delete: the row stays so that every disbursement that referenced it keeps its reference.
--
-- At most one default per merchant among live rows: the partial unique index decides, and
-- creating a new default unsets the old one in the same transaction (db/beneficiaries.ts).

create table beneficiaries (
  id uuid primary key,
  merchant_id uuid not null references merchants (id),
  label text not null
    constraint beneficiaries_label_length check (char_length(label) between 1 and 255),
  channel text not null
    constraint beneficiaries_channel_check check (channel in ('BANK', 'EWALLET')),
  bank_id uuid references banks (id),
  account_number text,
  account_name text,
  -- E-wallet short code (uppercase), as on disbursements.
  ewallet_provider text,
  -- 62 followed by digits only.
  ewallet_phone text
    constraint beneficiaries_ewallet_phone_check check (ewallet_phone ~ '^62[0-9]{8,12}$'),
  verification_status text not null default 'PENDING'
    constraint beneficiaries_verification_status_check check (verification_status in ('PENDING', 'VERIFIED', 'FAILED')),
  verified_name text,
  -- Why verification failed, as the vendor put it (for support; not part of the record).
  verification_failure text,
  is_default boolean not null default false,
  is_enabled boolean not null default true,
  deleted_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint beneficiaries_destination_check check (
    (channel = 'BANK' and bank_id is not null and account_number is not null and ewallet_provider is null and ewallet_phone is null)
    or (channel = 'EWALLET' and ewallet_provider is not null and ewallet_phone is not null
        and bank_id is null and account_number is null and account_name is null)),
  constraint beneficiaries_verification_check check (
    (verification_status = 'VERIFIED') = (verified_name is not null)
    and (verification_status = 'FAILED') = (verification_failure is not null)),
  -- A deleted beneficiary is never the default.
  constraint beneficiaries_deleted_default_check check (not (is_default and deleted_at is not null))
);
create unique index beneficiaries_one_default_key on beneficiaries (merchant_id) where is_default and deleted_at is null;
-- GET /v1/beneficiaries lists a merchant's live rows.
create index beneficiaries_merchant_idx on beneficiaries (merchant_id, created_at) where deleted_at is null;

alter table disbursements
  add constraint disbursements_beneficiary_id_fkey foreign key (beneficiary_id) references beneficiaries (id);
