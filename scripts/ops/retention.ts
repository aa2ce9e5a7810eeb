// Retention: retire operational records past their age now, as the scheduler does every hour.
import { z } from 'zod';
import { ConfigError, parseRetention } from '../../db/config.ts';
import { runRetention } from '../../db/retention.ts';
import { command, OpsError } from './command.ts';

export const retentionRun = command({
  name: 'retention:run',
  summary:
    'Retire operational records past their age (WEBHOOK_RETENTION_DAYS, VENDOR_CALLBACK_PAYLOAD_DAYS, VENDOR_CALLBACK_KEY_DAYS): ' +
    'months of webhook attempts (partitions dropped), ended webhook deliveries, vendor callback payloads and keys; --dry-run counts only',
  usage: 'retention:run [--dry-run] [--json]',
  flags: { 'dry-run': { type: 'boolean' } },
  input: z.object({ 'dry-run': z.boolean().optional() }),
  async run(ctx, input) {
    let config;
    try {
      config = parseRetention(process.env);
    } catch (err) {
      if (err instanceof ConfigError) throw new OpsError(err.message);
      throw err;
    }
    const report = await runRetention(await ctx.pool(), config, { dryRun: input['dry-run'] ?? false });
    const verb = report.dry_run ? 'would retire' : 'retired';
    const partitions = report.attempt_partitions_dropped;
    return {
      json: report,
      text: [
        `${verb}: ${partitions.length} month(s) of webhook attempts (${partitions.reduce((n, p) => n + p.rows, 0)} rows${partitions.length ? `: ${partitions.map((p) => p.name).join(', ')}` : ''})`,
        `  ${report.webhook_deliveries_deleted} webhook deliveries ended before ${report.webhooks_retained_since}`,
        `  ${report.callback_payloads_dropped} vendor callback payloads from before ${report.callback_payloads_retained_since}`,
        `  ${report.callback_keys_deleted} vendor callback keys from before ${report.callback_keys_retained_since}`,
      ].join('\n'),
    };
  },
});
