-- Fills the transfer kind of the postings written before migration 100 (see there). One
-- statement in this migration's transaction: it takes row locks only, which no serving code waits
-- on (postings are never updated, and inserts go on), and writes one new version of each
-- posting, so expect WAL and table growth about the size of ledger_postings (a vacuum reclaims
-- the old versions). Measured on a copy with 1,000,000 postings: see docs/performance.md.
update ledger_postings p set transfer_kind = t.kind
from ledger_transfers t
where t.id = p.transfer_id and p.transfer_kind is null;
