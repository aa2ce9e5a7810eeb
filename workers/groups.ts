// Worker groups: one Procfile line each, scaled independently. A group owns the queues whose
// handlers share a resource profile: vendor I/O, disbursement I/O, webhook I/O, periodic
// sweeps, CSV work. Every group also answers `ping`.
import type { WorkerContext } from './context.ts';
import { handlePing } from './ping.ts';
import { workQueue } from './work.ts';

export interface Group {
  /** Registers the group's queue handlers. */
  start(ctx: WorkerContext): Promise<void>;
  /** Stops timers the group owns (sweeps); pg-boss workers stop with boss.stop(). */
  stop?(): Promise<void>;
}

async function ping(ctx: WorkerContext) {
  await workQueue(ctx.boss, 'ping', { batchSize: 20 }, handlePing);
}

export const groups: Record<string, Group> = {
  vendor: { start: ping },
  disbursement: { start: ping },
  webhook: { start: ping },
  scheduler: { start: ping },
  csv: { start: ping },
};

export const groupNames = Object.keys(groups);
