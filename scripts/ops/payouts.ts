// Settling by hand a payout its vendor accepted and then lost (reconciliation keeps hearing
// "not found" after an acceptance): the operator, with the vendor's evidence in hand (a
// statement line, a support ticket), says whether the money arrived. docs/deploy.md has the runbook.
import { z } from 'zod';
import { settlePayoutByHand, SettleRefused } from '../../db/payouts.ts';
import { command, OpsError } from './command.ts';

export const payoutsSettle = command({
  name: 'payouts:settle',
  summary: 'Settle an in-flight payout (disbursement ON_PROCESS, settlement PROCESSING) by hand: SUCCESS, or FAILED and the debit returned once',
  usage: 'payouts:settle --ref DSB-…|STL-… --outcome SUCCESS|FAILED --reason TEXT [--evidence TEXT] [--vendor-id ID] [--json]',
  flags: { ref: { type: 'string' }, outcome: { type: 'string' }, reason: { type: 'string' }, evidence: { type: 'string' }, 'vendor-id': { type: 'string' } },
  input: z.object({
    ref: z.string().regex(/^DSB-\d+-[0-9A-Z]+$|^STL-\d{8}-\d+$/, '--ref must be a DSB- or STL- reference code'),
    outcome: z.enum(['SUCCESS', 'FAILED'], '--outcome must be SUCCESS or FAILED'),
    reason: z.string().trim().min(3, '--reason is required: why, in a few words').max(500),
    evidence: z.string().trim().max(2000).optional(),
    'vendor-id': z.string().trim().min(1).max(255).optional(),
  }),
  async run(ctx, input) {
    try {
      const settled = await settlePayoutByHand(await ctx.pool(), await ctx.boss(), input.ref, {
        status: input.outcome,
        reason: input.reason,
        evidence: input.evidence ?? null,
        vendorDisbursementId: input['vendor-id'] ?? null,
      });
      return { json: { ref: input.ref, ...settled }, text: `${input.ref} is now ${settled.status} (settled by hand)` };
    } catch (err) {
      if (err instanceof SettleRefused) throw new OpsError(err.message);
      throw err;
    }
  },
});
