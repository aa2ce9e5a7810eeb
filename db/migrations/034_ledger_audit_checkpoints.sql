-- What the ledger audit has already proved, so `ops ledger:audit` checks only what is new
-- (db/ledger.ts auditLedgerSince) and finishes in seconds at any size.
--
-- Per account: the last posting proved (by seq) and the balance and version proved up to it.
-- One account's postings are written under its row lock, so the postings a snapshot sees of
-- one account are always a prefix of all it will ever have: a checkpoint taken from any
-- snapshot stays valid, and the next audit goes on from it, whatever commits meanwhile.
create table ledger_audit_balances (
  account_id bigint primary key references ledger_accounts (id),
  last_seq bigint not null,
  balance bigint not null,
  version bigint not null,
  proved_at timestamptz not null default now()
);

-- Every audit run: its mode, when it started (the incremental audit reads orders paid since the
-- last clean run started) and what it found.
create table ledger_audit_runs (
  id bigint generated always as identity primary key,
  mode text not null constraint ledger_audit_runs_mode_check check (mode in ('FULL', 'INCREMENTAL')),
  started_at timestamptz not null,
  finished_at timestamptz not null default now(),
  accounts integer not null,
  postings bigint not null,
  problems integer not null
);
create index ledger_audit_runs_clean_idx on ledger_audit_runs (started_at desc) where problems = 0;

-- Orders are paid roughly in the order their rows were last written, so a BRIN index finds a
-- recent period's payments (the incremental audit's unposted-payment check) for a few pages of
-- index, and, being a summarising index, it does not stop an update from being HOT.
create index orders_paid_at_brin on orders using brin (paid_at);
