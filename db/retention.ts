// Retention of what is only operational: webhook deliveries and their attempts, vendor callback
// payloads and, later, their keys. Financial records (orders, the ledger, disbursements,
// refunds, settlements) are kept and never touched here (docs/deploy.md, "Retention").
//
// Invariants and why they hold:
// - Retiring a month of attempts drops its partition (migration 036): no row-by-row DELETE.
//   The partitions of this month and the next three are made first, so the default partition
//   stays empty and inserts never wait on a pass.
// - Everything else goes in batches of BATCH rows, each statement its own short transaction
//   with SKIP LOCKED: a backlog (the first pass over a year) is never one long transaction, a
//   pass cut off by a crash has retired whole batches only, and two passes never collide.
// - Only deliveries that ended (DELIVERED or FAILED, not reopened since) before the cut-off go:
//   a delivery still being retried or resent is never retired under its worker.
import type { RetentionConfig } from './config.ts';
import { retentionOldestKept, retentionPartitionsDropped, retentionRowsRetired } from './metrics.ts';
import type { Pool } from './pool.ts';
import { countCallbackKeys, countCallbackPayloads, deleteCallbackKeys, dropCallbackPayloads } from './vendors.ts';
import {
  attemptMonthsEndedBefore,
  countAttemptPartition,
  countEndedDeliveries,
  deleteEndedDeliveries,
  dropAttemptPartition,
  ensureAttemptPartitions,
} from './webhooks.ts';

const BATCH = 5_000;
const DAY_MS = 86_400_000;
/** Attempt partitions made ahead of time, so a pass missed for months still leaves inserts a home. */
const MONTHS_AHEAD = 3;

export interface RetentionReport {
  dry_run: boolean;
  /** Cut-offs in effect: what is older is retired (or would be, in a dry run). */
  webhooks_retained_since: string;
  callback_payloads_retained_since: string;
  callback_keys_retained_since: string;
  attempt_partitions_dropped: { name: string; rows: number }[];
  webhook_deliveries_deleted: number;
  callback_payloads_dropped: number;
  callback_keys_deleted: number;
}

/** How far back the merchant's delivery log reaches: deliveries that ended before this are retired. */
export function webhooksRetainedSince(config: Pick<RetentionConfig, 'WEBHOOK_RETENTION_DAYS'>, now = Date.now()): Date {
  return new Date(now - config.WEBHOOK_RETENTION_DAYS * DAY_MS);
}

async function inBatches(step: () => Promise<number>, stopped: () => boolean): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await step();
    total += n;
    if (n < BATCH || stopped()) return total;
  }
}

/** One retention pass (or, with dryRun, what one would retire, retiring nothing). */
export async function runRetention(pool: Pool, config: RetentionConfig, options: { dryRun?: boolean; stopped?: () => boolean } = {}): Promise<RetentionReport> {
  const dryRun = options.dryRun ?? false;
  const stopped = options.stopped ?? (() => false);
  const now = Date.now();
  const webhooks = webhooksRetainedSince(config, now);
  const payloads = new Date(now - config.VENDOR_CALLBACK_PAYLOAD_DAYS * DAY_MS);
  const keys = new Date(now - config.VENDOR_CALLBACK_KEY_DAYS * DAY_MS);

  if (!dryRun) await ensureAttemptPartitions(pool, MONTHS_AHEAD);
  const partitions: { name: string; rows: number }[] = [];
  for (const month of await attemptMonthsEndedBefore(pool, webhooks)) {
    const rows = await countAttemptPartition(pool, month.name);
    if (!dryRun) {
      await dropAttemptPartition(pool, month.name);
      retentionPartitionsDropped.inc({ table: 'webhook_attempts' });
      retentionRowsRetired.inc({ kind: 'webhook_attempts' }, rows);
    }
    partitions.push({ name: month.name, rows });
  }
  const deliveries = dryRun ? await countEndedDeliveries(pool, webhooks) : await inBatches(() => deleteEndedDeliveries(pool, webhooks, BATCH), stopped);
  const dropped = dryRun ? await countCallbackPayloads(pool, payloads) : await inBatches(() => dropCallbackPayloads(pool, payloads, BATCH), stopped);
  const deleted = dryRun ? await countCallbackKeys(pool, keys) : await inBatches(() => deleteCallbackKeys(pool, keys, BATCH), stopped);
  if (!dryRun) {
    retentionRowsRetired.inc({ kind: 'webhook_deliveries' }, deliveries);
    retentionRowsRetired.inc({ kind: 'vendor_callback_payloads' }, dropped);
    retentionRowsRetired.inc({ kind: 'vendor_callback_keys' }, deleted);
    retentionOldestKept.set({ kind: 'webhook_deliveries' }, webhooks.getTime() / 1000);
    retentionOldestKept.set({ kind: 'vendor_callback_payloads' }, payloads.getTime() / 1000);
    retentionOldestKept.set({ kind: 'vendor_callback_keys' }, keys.getTime() / 1000);
  }
  return {
    dry_run: dryRun,
    webhooks_retained_since: webhooks.toISOString(),
    callback_payloads_retained_since: payloads.toISOString(),
    callback_keys_retained_since: keys.toISOString(),
    attempt_partitions_dropped: partitions,
    webhook_deliveries_deleted: deliveries,
    callback_payloads_dropped: dropped,
    callback_keys_deleted: deleted,
  };
}
