-- Indexes behind the gauges every process reads on a Prometheus scrape (db/metrics.sql.ts).
-- The other watched states (orders CREATING, disbursements ON_PROCESS, refunds PENDING,
-- settlements PENDING/PROCESSING) already have partial indexes for their stale-work sweeps.

-- FAILED settlements wait for an operator (settlements:retry or settlements:cancel); counting
-- them must not scan a table that grows by one row per merchant and day.
create index settlements_failed_idx on settlements (updated_at) where status = 'FAILED';
