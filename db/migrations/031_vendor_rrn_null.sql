-- A reconciliation field holds the vendor's RRN or null, never an empty string: payments whose
-- vendor gave no RRN (a Midtrans notification without one) were stored as ''.
update orders set vendor_rrn = null where vendor_rrn = '';
alter table orders add constraint orders_vendor_rrn_not_empty check (vendor_rrn <> '') not valid;
alter table orders validate constraint orders_vendor_rrn_not_empty;
