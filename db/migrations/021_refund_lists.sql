-- GET /v1/refunds lists a merchant's refunds newest first, optionally by status and a range of
-- created_at: one index serves the order, the range and the count; status is filtered on it.
create index refunds_merchant_created_idx on refunds (merchant_id, created_at desc, id desc);
