-- The vendors each payout reference was sent to, in the order Kasir called them (a reference goes
-- to the next routed vendor when one surely refuses it). A settlement's retry goes out under a
-- new reference and its row then names only the new attempt's vendor, so without this a
-- vendor's word on an earlier attempt could not be checked against the vendor that held it:
-- a payment of an attempt Kasir gave up on (a possible double payout) is recorded as a
-- contradiction when its vendor says so (db/settlements.ts completeSettlement), and
-- reconciliation reads an earlier attempt at the vendors it went to (db/recon.sql.ts).
alter table payout_references add column vendors text[] not null default '{}';

-- References sent before: a disbursement's every vendor, a settlement's current attempt's.
-- Earlier settlement attempts' vendors were not kept and stay unknown ('{}').
update payout_references pr set vendors = d.vendors_tried
from disbursements d
where pr.kind = 'DISBURSEMENT' and d.id = pr.payout_id;

update payout_references pr set vendors = s.vendors_tried
from settlements s
where pr.kind = 'SETTLEMENT' and s.id = pr.payout_id
  and pr.reference = case when s.payout_attempt = 1 then s.ref_code else s.ref_code || '-' || s.payout_attempt end;
