// Worker groups: one Procfile line each, scaled independently. A group owns the queues whose
// handlers share a resource profile: vendor I/O, disbursement I/O, webhook I/O, periodic
// sweeps, CSV work. Every group also answers `ping`.
import type { WorkerContext } from './context.ts';
import { handlePing } from './ping.ts';
import { workQueue } from './work.ts';

// Each group imports its handlers when it starts, so a process loads only its own line's code:
// the csv worker does not carry the HTTP client and vendor adapters (about 30 MB of its
// resident memory, which the export bench measures against its 150 MB budget).
export interface Group {
  /** Registers the group's queue handlers. */
  start(ctx: WorkerContext): Promise<void>;
  /** Stops timers the group owns (sweeps); pg-boss workers stop with boss.stop(). */
  stop?(): Promise<void>;
  /** Connections the group needs on DATABASE_REPLICA_URL (ctx.replica); none when unset. */
  replicaPoolSize?: number;
}

async function ping(ctx: WorkerContext) {
  await workQueue(ctx.boss, 'ping', { batchSize: 20 }, handlePing);
}

// Vendor and webhook handlers wait on remote HTTP, so a process keeps many jobs in flight
// (batchSize) across a few fetch loops; the figures bound one process's load on vendors.
const VENDOR_BATCH = 50;
const DISBURSEMENT_BATCH = 50;

let sweep: { stop(): Promise<void> } | null = null;
let webhooks: { stop(): Promise<void> } | null = null;
let keySweep: { stop(): Promise<void> } | null = null;
let exportSweep: { stop(): Promise<void> } | null = null;
let statisticsSweep: { stop(): Promise<void> } | null = null;
let retentionSweep: { stop(): Promise<void> } | null = null;

export const groups: Record<string, Group> = {
  vendor: {
    async start(ctx) {
      const { handleOrderCreate } = await import('./order-create.ts');
      const { handleOrderReconcile } = await import('./order-reconcile.ts');
      const { handleRefundExecute } = await import('./refund-execute.ts');
      await ping(ctx);
      await workQueue(ctx.boss, 'order-create', { batchSize: VENDOR_BATCH, loops: 8 }, (p, job) => handleOrderCreate(ctx, p, job));
      await workQueue(ctx.boss, 'order-reconcile', { batchSize: VENDOR_BATCH }, (p) => handleOrderReconcile(ctx, p));
      await workQueue(ctx.boss, 'refund-execute', { batchSize: VENDOR_BATCH }, (p) => handleRefundExecute(ctx, p));
      // One reconciliation at a time per process: a run reads a vendor's whole day.
      const { handleReconRun } = await import('./recon-run.ts');
      await workQueue(ctx.boss, 'recon-run', { batchSize: 1 }, (p, job) => handleReconRun(ctx, p, job));
    },
  },
  disbursement: {
    async start(ctx) {
      const { handleDisbursementExecute, handleDisbursementReconcile, handleSettlementPayout, handleSettlementReconcile } = await import('./payout-execute.ts');
      const { handleBeneficiaryVerify } = await import('./beneficiary-verify.ts');
      await ping(ctx);
      await workQueue(ctx.boss, 'disbursement-execute', { batchSize: DISBURSEMENT_BATCH, loops: 2 }, (p) => handleDisbursementExecute(ctx, p));
      await workQueue(ctx.boss, 'disbursement-reconcile', { batchSize: DISBURSEMENT_BATCH }, (p) => handleDisbursementReconcile(ctx, p));
      await workQueue(ctx.boss, 'beneficiary-verify', { batchSize: DISBURSEMENT_BATCH }, (p, job) => handleBeneficiaryVerify(ctx, p, job));
      await workQueue(ctx.boss, 'settlement-payout', { batchSize: DISBURSEMENT_BATCH }, (p) => handleSettlementPayout(ctx, p));
      await workQueue(ctx.boss, 'settlement-reconcile', { batchSize: DISBURSEMENT_BATCH }, (p) => handleSettlementReconcile(ctx, p));
    },
  },
  webhook: {
    // Not pg-boss's work loop: a batch there lasts as long as its slowest request, so one
    // hanging merchant held everyone's webhooks. The dispatcher keeps its places filled and
    // limits each destination (workers/webhook-dispatch.ts).
    async start(ctx) {
      const { startWebhookDispatch } = await import('./webhook-dispatch.ts');
      await ping(ctx);
      webhooks = await startWebhookDispatch(ctx);
    },
    stop: async () => {
      await webhooks?.stop();
    },
  },
  scheduler: {
    async start(ctx) {
      const { startExpirySweep } = await import('./order-expire.ts');
      const { startIdempotencySweep } = await import('./idempotency-sweep.ts');
      const { startStatisticsSweep } = await import('./statistics-sweep.ts');
      const { handleSettlementRun, scheduleSettlementRun } = await import('./settlement-run.ts');
      await ping(ctx);
      sweep = startExpirySweep(ctx);
      keySweep = startIdempotencySweep(ctx);
      statisticsSweep = startStatisticsSweep(ctx);
      const { startRetentionSweep } = await import('./retention-sweep.ts');
      retentionSweep = startRetentionSweep(ctx);
      // One run at a time per process: a run walks every MANUAL merchant.
      await workQueue(ctx.boss, 'settlement-run', { batchSize: 1 }, (p, job) => handleSettlementRun(ctx, p, job));
      await scheduleSettlementRun(ctx);
      // The daily reconciliation (RECON_CRON in WIB, after the settlement run); the vendor group
      // runs it (workers/recon-run.ts), so this process does not load the vendor adapters. missed
      // 'once': a scheduler down at that hour still sends the day when it is back.
      await ctx.boss.schedule('recon-run', ctx.config.RECON_CRON, {}, { tz: 'Asia/Jakarta', key: 'daily', missed: 'once' });
    },
    stop: async () => {
      await Promise.all([sweep?.stop(), keySweep?.stop(), statisticsSweep?.stop(), retentionSweep?.stop()]);
    },
  },
  csv: {
    // caughtUp's position reads (the export's COPY opens a connection of its own).
    replicaPoolSize: 1,
    async start(ctx) {
      const { handleExportBuild, tuneHeapForExports } = await import('./export-build.ts');
      const { startExportSweep } = await import('./export-sweep.ts');
      tuneHeapForExports();
      await ping(ctx);
      // One export at a time per process: its memory is one chunk and the COPY's read buffers.
      await workQueue(ctx.boss, 'export-build', { batchSize: 1 }, (p, job) => handleExportBuild(ctx, p, job));
      exportSweep = startExportSweep(ctx);
    },
    stop: async () => {
      await exportSweep?.stop();
    },
  },
};

export const groupNames = Object.keys(groups);
