-- One row per periodic sweep (expiry, stale restarts, idempotency keys, exports). Every copy of
-- the scheduler and csv lines runs the same sweeps; a pass starts only by moving its sweep's
-- next_at forward in one statement while it is due, so with any number of copies each sweep
-- runs once per interval (workers/periodic.ts).
create table sweep_passes (
  sweep text not null,
  -- When the current pass was claimed, and by which process (KASIR_PROCESS:pid): for operators.
  started_at timestamptz not null,
  process text not null,
  -- When the next pass is due; a stopping process that holds the current pass sets it to now,
  -- so a restarted copy does not wait out the interval.
  next_at timestamptz not null,
  constraint sweep_passes_pkey primary key (sweep)
);
