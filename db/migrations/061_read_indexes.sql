-- Indexes that fit the filters and sorts of reads that grow with history (issue 35).
--
-- Daily reconciliation's record-by-record passes (db/recon.sql.ts) read a vendor's orders created
-- on the day, and the ones still PENDING or EXPIRED from before it whose expiry reaches into it;
-- orders_vendor_paid_idx covers only the paid ones.
create index orders_vendor_created_idx on orders (vendor_code, created_at);
create index orders_vendor_open_idx on orders (vendor_code, expires_at) where status in ('PENDING', 'EXPIRED');

-- GET /v1/disbursements?status= : the page and its count on the status's own entries.
create index disbursements_merchant_status_idx on disbursements (merchant_id, status, created_at desc, id desc);
