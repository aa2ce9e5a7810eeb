-- Webhook deliveries an operator sends as samples (ops webhooks:trigger) are flagged, so a list
-- of deliveries never passes one off as a real event; and export events name their export.
-- export_id has no foreign key on purpose: exports are deleted after their retention, while the
-- record of what was sent to the merchant stays.
alter table webhook_deliveries add column sample boolean not null default false;
alter table webhook_deliveries add column export_id uuid;
