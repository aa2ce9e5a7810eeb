// Sealed secrets at rest: rewrite every value not sealed the current way (before binding,
// before key ids, or under a previous master key) under the current key; --check only counts.
import { z } from 'zod';
import { countSealed, resealAll, type SealedCounts } from '../../db/secret-reseal.ts';
import type { Sealer } from '../../db/secrets.ts';
import { command } from './command.ts';

function keyLines(sealer: Sealer, counts: SealedCounts): string[] {
  const previous = sealer.previousKeyIds.length ? sealer.previousKeyIds.join(', ') : 'none';
  return [
    `current master key ${sealer.keyId}; previous keys ${previous}`,
    `values under the current key: ${counts.current}`,
    `values left to reseal: ${counts.remaining}`,
    ...(counts.unbound ? [`  unbound (from before row binding): ${counts.unbound}`] : []),
    ...(counts.without_key_id ? [`  without key id (from before key ids): ${counts.without_key_id}`] : []),
    ...Object.entries(counts.under_key).map(([id, n]) =>
      `  under key ${id}${sealer.previousKeyIds.includes(id) ? '' : ' (not configured: does not open)'}: ${n}`),
    ...(counts.remaining === 0 && sealer.previousKeyIds.length ? ['no value needs a previous key: KASIR_MASTER_KEYS_PREVIOUS may be emptied'] : []),
  ];
}

export const secretsReseal = command({
  name: 'secrets:reseal',
  summary: 'Reseal every secret not under the current master key, bound to its row (after an upgrade or a key rotation); safe to run again or to stop. --check only counts',
  usage: 'secrets:reseal [--check] [--json]',
  flags: { check: { type: 'boolean' } },
  input: z.object({ check: z.boolean().default(false) }),
  async run(ctx, input) {
    const pool = await ctx.pool();
    const sealer = await ctx.sealer();
    const keys = { current_key_id: sealer.keyId, previous_key_ids: sealer.previousKeyIds };
    if (input.check) {
      const counts = await countSealed(pool, sealer.keyId);
      return { json: { ...keys, ...counts }, text: keyLines(sealer, counts).join('\n') };
    }
    const report = await resealAll(pool, sealer);
    const counts = await countSealed(pool, sealer.keyId);
    const lines = [
      ...Object.entries(report.resealed).map(([column, n]) => `${column}: ${n} resealed`),
      ...report.failed.map((f) => `FAILED ${f.table}.${f.column} ${f.row_id}: ${f.error}`),
      ...keyLines(sealer, counts),
    ];
    return { json: { ...keys, ...report, ...counts }, text: lines.join('\n'), exitCode: report.failed.length ? 1 : 0 };
  },
});
