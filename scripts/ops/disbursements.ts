// Disbursement review: approve (it is sent) or reject (the debit returns to the wallet).
import { z } from 'zod';
import { reviewDisbursement, ReviewRefused } from '../../db/disbursements.ts';
import { presentDisbursement } from '../../db/present/disbursements.ts';
import { command, OpsError } from './command.ts';

const id = z.uuid('--id must be a disbursement UUID');

function review(decision: 'approve' | 'reject') {
  return async (ctx: Parameters<Parameters<typeof command>[0]['run']>[0], input: { id: string; reason?: string }) => {
    try {
      const d = await reviewDisbursement(await ctx.pool(), await ctx.boss(), input.id, decision, input.reason ?? null);
      return { json: presentDisbursement(d), text: `disbursement ${d.ref_code} is now ${d.status}` };
    } catch (err) {
      if (err instanceof ReviewRefused) throw new OpsError(err.message);
      throw err;
    }
  };
}

export const disbursementsApprove = command({
  name: 'disbursements:approve',
  summary: 'Approve an IN_REVIEW disbursement: it is sent to the vendor',
  usage: 'disbursements:approve --id UUID [--json]',
  flags: { id: { type: 'string' } },
  input: z.object({ id }),
  run: review('approve'),
});

export const disbursementsReject = command({
  name: 'disbursements:reject',
  summary: 'Reject an IN_REVIEW disbursement: REJECTED, total_debit credited back',
  usage: 'disbursements:reject --id UUID [--reason TEXT] [--json]',
  flags: { id: { type: 'string' }, reason: { type: 'string' } },
  input: z.object({ id, reason: z.string().trim().min(1).max(500).optional() }),
  run: review('reject'),
});
