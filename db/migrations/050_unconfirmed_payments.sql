-- A third kind of vendor word Kasir records and does not apply (db/vendor-binding.ts):
--   UNCONFIRMED  a payment callback authenticated only by a secret the account holder can read
--                too (Xendit's callback token, a shared HMAC secret), which the vendor's own read
--                of the order's QR did not confirm: it named another QR than the one Kasir stored
--                for the order, or the read shows the QR unpaid (api/payment-hints.ts).
alter table vendor_conflicts drop constraint vendor_conflicts_kind_check;
alter table vendor_conflicts add constraint vendor_conflicts_kind_check check (kind in ('NOT_ITS_RECORD', 'CONTRADICTION', 'UNCONFIRMED'));
