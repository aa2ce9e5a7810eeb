-- Merchants list their own webhook deliveries (GET /v1/webhook-deliveries), newest first.
create index webhook_deliveries_merchant_idx on webhook_deliveries (merchant_id, created_at desc, id);
