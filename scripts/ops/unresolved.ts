// What waits for an operator because a vendor's answer was unclear and no read at the vendor can
// settle it (gateways/gateway.ts, the rule on unclear answers): list it, then settle each with
// the vendor's evidence. Payouts are settled with payouts:settle; refunds here. docs/deploy.md
// has the runbook.
import { z } from 'zod';
import { RefundSettleRefused, resendRefund, settleRefundByHand } from '../../db/unresolved.ts';
import { command, OpsError } from './command.ts';

const refundRef = z.string().regex(/^RFD-\d+-[0-9A-Z]+$/, '--ref must be a refund reference code (RFD-…)');
const reason = z.string().trim().min(3, '--reason is required: why, in a few words').max(500);
const evidence = z.string().trim().min(3, "--evidence is required: the vendor's word (a ticket, a dashboard screenshot's name)").max(2000);

export const refundsSettle = command({
  name: 'refunds:settle',
  summary: "Settle a PENDING refund by hand with the vendor's evidence: SUCCEEDED, or FAILED and the money returned to the merchant once",
  usage: 'refunds:settle --ref RFD-… --outcome SUCCEEDED|FAILED --reason TEXT --evidence TEXT [--vendor-id ID] [--json]',
  flags: { ref: { type: 'string' }, outcome: { type: 'string' }, reason: { type: 'string' }, evidence: { type: 'string' }, 'vendor-id': { type: 'string' } },
  input: z.object({
    ref: refundRef,
    outcome: z.enum(['SUCCEEDED', 'FAILED'], '--outcome must be SUCCEEDED or FAILED'),
    reason,
    evidence,
    'vendor-id': z.string().trim().min(1).max(255).optional(),
  }),
  async run(ctx, input) {
    try {
      const settled = await settleRefundByHand(await ctx.pool(), await ctx.boss(), input.ref, {
        status: input.outcome,
        reason: input.reason,
        evidence: input.evidence,
        vendorRefundId: input['vendor-id'] ?? null,
      });
      return { json: { ref: input.ref, ...settled }, text: `${input.ref} is now ${settled.status} (settled by hand)` };
    } catch (err) {
      if (err instanceof RefundSettleRefused) throw new OpsError(err.message);
      throw err;
    }
  },
});

export const refundsResend = command({
  name: 'refunds:resend',
  summary: 'Send an UNRESOLVED refund again, once the vendor has shown it has no such refund',
  usage: 'refunds:resend --ref RFD-… --evidence TEXT [--json]',
  flags: { ref: { type: 'string' }, evidence: { type: 'string' } },
  input: z.object({ ref: refundRef, evidence }),
  async run(ctx, input) {
    try {
      const sent = await resendRefund(await ctx.pool(), await ctx.boss(), input.ref, input.evidence);
      return { json: { ref: input.ref, ...sent, queued: true }, text: `${input.ref} queued to be sent again (evidence: ${input.evidence})` };
    } catch (err) {
      if (err instanceof RefundSettleRefused) throw new OpsError(err.message);
      throw err;
    }
  },
});
