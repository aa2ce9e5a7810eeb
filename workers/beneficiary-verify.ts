// beneficiary-verify: asks a vendor who holds a beneficiary's account. PENDING → VERIFIED with
// the holder's name; NAME_MISMATCH when a name was saved and the bank's is another holder's
// (compared after normalising case, punctuation and titles: db/account-names.ts), so a
// disbursement to it is refused unless its request accepts the mismatch; FAILED when the
// vendor says no such account can receive money.
//
// An inquiry moves no money, so any routed vendor may be asked and asking twice is harmless:
// the routed vendors for the channel are tried best first until one answers. No definite answer
// from any of them (refused, timed out, none routed) is kept on the row as the last attempt's
// reason and throws, so pg-boss retries with backoff; the beneficiary stays PENDING meanwhile.
// The job's last attempt does not throw: it records FAILED with that reason, so a check whose
// retries all fail ends. A chain that dies before its last attempt finishes (the worker killed,
// the job expired) is ended by the scheduler's deadline sweep (db/beneficiaries.ts). Results are
// written only onto a PENDING row, so a duplicate or retried job, or one racing another or the
// sweep, changes nothing once one has written.
import type { Job } from 'pg-boss';
import { sameHolder } from '../db/account-names.ts';
import { findBankById } from '../db/master-data.ts';
import { findBeneficiary, recordAttemptFailure, recordVerification, type Verification } from '../db/beneficiaries.sql.ts';
import { queues } from '../db/queue.ts';
import { routeVendors } from '../db/vendors.ts';
import type { WorkerContext } from './context.ts';
import { gatewayOf } from './gateway.ts';

const RETRY_LIMIT = queues['beneficiary-verify'].options.retryLimit;

export async function handleBeneficiaryVerify(
  ctx: WorkerContext,
  payload: { beneficiary_id: string },
  job: Pick<Job<unknown>, 'retryCount'>,
): Promise<Record<string, unknown>> {
  const b = await findBeneficiary(ctx.pool, payload.beneficiary_id);
  if (!b) return { skipped: 'missing' };
  if (b.verification_status !== 'PENDING') return { skipped: b.verification_status };
  if (b.deleted_at) return { skipped: 'deleted' };

  const problem = await inquire(ctx, b);
  if (typeof problem !== 'string') return problem;
  if (job.retryCount >= RETRY_LIMIT) {
    const recorded = await recordVerification(ctx.pool, b.id, { status: 'FAILED', reason: problem });
    return { status: recorded?.verification_status ?? 'already_done', exhausted: true };
  }
  await recordAttemptFailure(ctx.pool, b.id, problem);
  throw new Error(problem);
}

/** The recorded answer of the first vendor that gives one, or why none did. */
async function inquire(ctx: WorkerContext, b: NonNullable<Awaited<ReturnType<typeof findBeneficiary>>>): Promise<Record<string, unknown> | string> {
  const bank = b.bank_id ? await findBankById(ctx.pool, b.bank_id) : null;
  const inquiry = {
    channel: b.channel,
    bankCode: bank?.short_code ?? null,
    ewalletCode: b.ewallet_provider,
    accountNumber: b.channel === 'BANK' ? b.account_number! : b.ewallet_phone!,
    // A vendor whose inquiry carries a name (the simulator's) is told the saved one; the
    // comparison below is Kasir's either way.
    accountName: b.account_name,
  };
  const vendors = await routeVendors(ctx.pool, ctx.sealer, b.merchant_id, b.channel);
  if (vendors.length === 0) return `no vendor routed for ${b.channel} inquiries`;
  const problems: string[] = [];
  for (const vendor of vendors) {
    const answer = await gatewayOf(ctx, vendor).inquireAccount(inquiry);
    if (answer.kind !== 'ok') {
      problems.push(`${vendor.code}: ${answer.reason}`);
      continue;
    }
    const result: Verification =
      answer.value.status === 'NOT_FOUND'
        ? { status: 'FAILED', reason: answer.value.reason }
        : b.account_name === null || sameHolder(b.account_name, answer.value.accountName)
          ? { status: 'VERIFIED', verifiedName: answer.value.accountName }
          : { status: 'NAME_MISMATCH', verifiedName: answer.value.accountName, reason: `ACCOUNT_NAME_MISMATCH: ${vendor.code} names the holder ${answer.value.accountName}` };
    const recorded = await recordVerification(ctx.pool, b.id, result);
    return { status: recorded?.verification_status ?? 'already_done', vendor: vendor.code };
  }
  return `no vendor answered the inquiry: ${problems.join('; ')}`;
}
