// beneficiary-verify: asks a vendor who holds a new beneficiary's account. PENDING → VERIFIED
// with the holder's name, or FAILED when the vendor says no such account can receive money.
//
// An inquiry moves no money, so any routed vendor may be asked and asking twice is harmless:
// the routed vendors for the channel are tried best first until one answers. No definite answer
// from any of them (refused, timed out, none routed) throws, and pg-boss retries with backoff;
// the beneficiary stays PENDING meanwhile. The result is written only onto a PENDING row, so a
// duplicate or retried job, or one racing another, changes nothing once one has written.
import { findBankById } from '../db/master-data.ts';
import { findBeneficiary, recordVerification, type Verification } from '../db/beneficiaries.sql.ts';
import { routeVendors } from '../db/vendors.ts';
import type { WorkerContext } from './context.ts';
import { gatewayOf } from './gateway.ts';

export async function handleBeneficiaryVerify(ctx: WorkerContext, payload: { beneficiary_id: string }): Promise<Record<string, unknown>> {
  const b = await findBeneficiary(ctx.pool, payload.beneficiary_id);
  if (!b) return { skipped: 'missing' };
  if (b.verification_status !== 'PENDING') return { skipped: b.verification_status };
  if (b.deleted_at) return { skipped: 'deleted' };

  const bank = b.bank_id ? await findBankById(ctx.pool, b.bank_id) : null;
  const inquiry = {
    channel: b.channel,
    bankCode: bank?.short_code ?? null,
    ewalletCode: b.ewallet_provider,
    accountNumber: b.channel === 'BANK' ? b.account_number! : b.ewallet_phone!,
  };
  const vendors = await routeVendors(ctx.pool, ctx.sealer, b.merchant_id, b.channel);
  if (vendors.length === 0) throw new Error(`no vendor routed for ${b.channel} inquiries`);
  const problems: string[] = [];
  for (const vendor of vendors) {
    const answer = await gatewayOf(ctx, vendor).inquireAccount(inquiry);
    if (answer.kind !== 'ok') {
      problems.push(`${vendor.code}: ${answer.reason}`);
      continue;
    }
    const result: Verification =
      answer.value.status === 'FOUND'
        ? { status: 'VERIFIED', verifiedName: answer.value.accountName }
        : { status: 'FAILED', reason: answer.value.reason };
    const recorded = await recordVerification(ctx.pool, b.id, result);
    return { status: recorded?.verification_status ?? 'already_done', vendor: vendor.code };
  }
  throw new Error(`no vendor answered the inquiry: ${problems.join('; ')}`);
}
