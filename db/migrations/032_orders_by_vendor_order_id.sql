-- Callbacks that name an order only by the vendor's id for its QR (SNAP notifies without
-- originalPartnerReferenceNo) find it by that id. On a large orders table, create the index
-- beforehand without blocking writes, under the same name, and this migration does nothing:
--   create index concurrently orders_vendor_order_idx on orders (vendor_order_id, vendor_code) where vendor_order_id is not null;
create index if not exists orders_vendor_order_idx on orders (vendor_order_id, vendor_code) where vendor_order_id is not null;
