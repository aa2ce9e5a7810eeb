-- webhook_delivery_counts_move (104) joins a statement's old and new rows by id. The webhook
-- worker records a batch of attempts in a transaction that keeps its statements on primary-key
-- probes whatever the statistics say (hash and merge joins off: workers/webhook-deliver.ts,
-- PROBE_PLANS), and those settings reached the trigger's join of two transition tables, which
-- have no index: a nested loop, every old row against every new one. With its own setting the
-- join is hashed again: recording a batch of 130 attempts took 20 ms, now 10 ms (the median of
-- six, four rounds alternating the two, on an idle test database).
alter function webhook_delivery_counts_move() set enable_hashjoin = on;
