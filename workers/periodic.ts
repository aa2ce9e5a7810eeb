// A periodic pass for the sweeps (scheduler and csv groups): one pass of each sweep per interval
// across every copy of the line, wherever the copies run.
//
// Every copy of a line runs the same sweeps, so a pass starts only by claiming it: one
// statement moves the sweep's row in sweep_passes (db/sweep-passes.ts) to its next due time,
// and only the process whose statement moved it runs the pass; the others learn when it is due
// next and sleep until then. Due times are the database's clock, so hosts need not agree on
// the time. Running N copies would otherwise run every sweep N times an interval, and some
// passes are not harmless twice (two expiry passes would both re-queue a stale create).
//
// No lock is held between or during passes: a process that dies holds nothing, and another
// copy takes over when the pass comes due (within one interval). A pass that runs longer than
// its interval may meet the next one (another copy's): passes work on rows they claim or lock
// with SKIP LOCKED, so that costs time, never correctness. A clean stop (SIGTERM) hands the
// sweep over at once (releaseSweepPass), so a restarted copy does not wait out the interval.
//
// A pass that throws is logged and runs again next interval. stop() waits for a pass in
// progress, so a SIGTERM never cuts one off mid-statement. Each pass logs 'sweep pass' (debug)
// with its sweep and the database's time of the claim: how a run shows, across processes, that
// no sweep ran twice in an interval (test/topology/replicas.test.ts).
import { logger } from '../db/logger.ts';
import type { Db } from '../db/pool.ts';
import { claimSweepPass, releaseSweepPass } from '../db/sweep-passes.ts';

export interface Periodic {
  stop(): Promise<void>;
}

/** This process as sweep_passes records it: its Procfile line and pid. */
const PROCESS = `${process.env.KASIR_PROCESS ?? 'worker'}:${process.pid}`;

export function every(db: Db, name: string, intervalMs: number, pass: (stopped: () => boolean) => Promise<void>): Periodic {
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> = Promise.resolve();

  /** Runs the pass if it is this process's turn; resolves how long to wait before asking again. */
  const tick = async (): Promise<number> => {
    let claim;
    try {
      claim = await claimSweepPass(db, name, intervalMs, PROCESS);
    } catch (err) {
      logger.error({ err, sweep: name }, 'sweep pass not claimed; will retry next interval');
      return intervalMs;
    }
    if (!claim.mine) return claim.wait_ms === null ? intervalMs : Math.min(intervalMs, Math.max(0, claim.wait_ms));
    const started = Date.now();
    logger.debug({ sweep: name, started_at: claim.now_ms }, 'sweep pass');
    try {
      await pass(() => stopped);
    } catch (err) {
      logger.error({ err, sweep: name }, 'sweep failed; will retry next interval');
    }
    return Math.max(0, started + intervalMs - Date.now());
  };
  const next = (waitMs: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = tick().then(next);
    }, waitMs);
  };
  running = tick().then(next);

  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
      await releaseSweepPass(db, name, PROCESS).catch((err) => logger.warn({ err, sweep: name }, 'sweep pass not handed over'));
    },
  };
}
