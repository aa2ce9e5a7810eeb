// The claims that make each periodic sweep run once per interval across every process that
// runs it (workers/periodic.ts; table sweep_passes, migration 025). One statement per claim:
// no lock is held between passes, so a pass needs no connection of its own and a process that
// dies holds nothing but a due time that passes.
import { z } from 'zod';
import { sql, type Db } from './pool.ts';

const claimRow = z.object({
  mine: z.boolean(),
  /** The database's clock at the claim (epoch ms): the pass's start, comparable across hosts. */
  now_ms: z.number(),
  /** How long until the sweep is due again (ms, by the database's clock); null if unknown. */
  wait_ms: z.number().nullable(),
});
export type SweepClaim = z.infer<typeof claimRow>;

/**
 * Claims the sweep's next pass for `process` when it is due (or the sweep has never run):
 * mine true, and the next pass is due intervalMs from now. Otherwise mine false and wait_ms says
 * when it is due. Concurrent claims serialise on the row: exactly one moves it.
 */
export function claimSweepPass(db: Db, sweep: string, intervalMs: number, process: string): Promise<SweepClaim> {
  return db.one(sql.type(claimRow)`
    with claimed as (
      insert into sweep_passes as s (sweep, started_at, process, next_at)
      values (${sweep}, now(), ${process}, now() + make_interval(secs => ${intervalMs / 1000}))
      on conflict (sweep) do update
        set started_at = excluded.started_at, process = excluded.process, next_at = excluded.next_at
        where s.next_at <= now()
      returning next_at
    )
    select exists (select 1 from claimed) as mine,
           floor(extract(epoch from now()) * 1000)::int8 as now_ms,
           ceil(extract(epoch from coalesce((select next_at from claimed), (select next_at from sweep_passes where sweep = ${sweep})) - now()) * 1000)::int8 as wait_ms`);
}

/** Makes the sweep due now if `process` holds its current pass (a clean stop hands it over). */
export function releaseSweepPass(db: Db, sweep: string, process: string) {
  return db.query(sql.unsafe`
    update sweep_passes set next_at = now() where sweep = ${sweep} and process = ${process} and next_at > now()`);
}
