-- Fills the transfer kind of the postings written before migration 100 (see there). One
-- statement in this migration's transaction: it takes row locks only, which no serving code waits
-- on (postings are never updated, and inserts go on), and writes one new version of each
-- posting, so expect WAL and table growth about the size of ledger_postings (a vacuum reclaims
-- the old versions).
update ledger_postings p set transfer_kind = t.kind
from ledger_transfers t
where t.id = p.transfer_id and p.transfer_kind is null;

-- Every posting must have its kind from now on. NOT VALID: the rows just filled are not scanned
-- again under this statement's exclusive lock (a moment); migration 103 validates them apart.
alter table ledger_postings add constraint ledger_postings_transfer_kind_check check (transfer_kind is not null) not valid;
