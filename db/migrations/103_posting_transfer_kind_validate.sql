-- Proves the check added NOT VALID by migration 101 on the postings written before it: a scan
-- under a lock that neither reads nor writes wait on (SHARE UPDATE EXCLUSIVE), in a transaction
-- of its own so no stronger lock of an earlier step is held meanwhile.
alter table ledger_postings validate constraint ledger_postings_transfer_kind_check;
