// Sealed secrets at rest: rewrite values sealed before they were bound to their row.
import { z } from 'zod';
import { countUnbound, resealUnbound } from '../../db/secret-reseal.ts';
import { command } from './command.ts';

export const secretsReseal = command({
  name: 'secrets:reseal',
  summary: 'Bind every sealed secret to its row (values from before binding); safe to run again',
  usage: 'secrets:reseal [--json]',
  flags: {},
  input: z.object({}),
  async run(ctx) {
    const pool = await ctx.pool();
    const report = await resealUnbound(pool, ctx.sealer());
    const remaining = await countUnbound(pool);
    const lines = [
      ...Object.entries(report.resealed).map(([column, n]) => `${column}: ${n} resealed`),
      ...report.failed.map((f) => `FAILED ${f.table}.${f.column} ${f.row_id}: ${f.error}`),
      `unbound values remaining: ${remaining}`,
    ];
    return { json: { ...report, remaining }, text: lines.join('\n'), exitCode: report.failed.length ? 1 : 0 };
  },
});
