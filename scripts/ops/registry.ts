// The ops CLI's commands by name, each loaded only when it runs (scripts/ops.ts): a command
// pulls in its own module's imports, not every aggregate, connector and pg-boss, so a support
// script that runs one command many times pays a small start each time. help loads them all.
// test/scripts/ops-registry.test.ts checks that every command a module exports is here under
// its own name.
import type { Command } from './command.ts';

type Loader = () => Promise<Command>;

export const COMMANDS: Readonly<Record<string, Loader>> = {
  'merchant:create': async () => (await import('./merchants.ts')).merchantCreate as Command,
  'brand:create': async () => (await import('./merchants.ts')).brandCreate as Command,
  'brand:set-checkout-language': async () => (await import('./merchants.ts')).brandSetCheckoutLanguage as Command,
  'merchant:set-status': async () => (await import('./merchants.ts')).merchantSetStatus as Command,
  'merchant:rotate-key': async () => (await import('./merchants.ts')).merchantRotateKey as Command,
  'merchant:rotate-legacy-secret': async () => (await import('./merchants.ts')).merchantRotateLegacySecret as Command,
  'merchant:set-public-key': async () => (await import('./merchants.ts')).merchantSetPublicKey as Command,
  'merchant:set-webhook-secret': async () => (await import('./merchants.ts')).merchantSetWebhookSecret as Command,
  'merchant:set-notify-url': async () => (await import('./merchants.ts')).merchantSetNotifyUrl as Command,
  'merchant:set-fees': async () => (await import('./ledger.ts')).merchantSetFees as Command,
  'merchant:set-settlement-account': async () => (await import('./settlements.ts')).merchantSetSettlementAccount as Command,
  'ledger:audit': async () => (await import('./ledger.ts')).ledgerAudit as Command,
  'retention:run': async () => (await import('./retention.ts')).retentionRun as Command,
  'ledger:fill-order-fees': async () => (await import('./ledger.ts')).ledgerFillOrderFees as Command,
  'ledger:adjust': async () => (await import('./ledger.ts')).ledgerAdjust as Command,
  'disbursements:approve': async () => (await import('./disbursements.ts')).disbursementsApprove as Command,
  'disbursements:reject': async () => (await import('./disbursements.ts')).disbursementsReject as Command,
  'payouts:settle': async () => (await import('./payouts.ts')).payoutsSettle as Command,
  'recon:run': async () => (await import('./recon.ts')).reconRun as Command,
  'recon:show': async () => (await import('./recon.ts')).reconShow as Command,
  'recon:resolve': async () => (await import('./recon.ts')).reconResolve as Command,
  'recon:set-cost': async () => (await import('./recon.ts')).reconSetCost as Command,
  'recon:export': async () => (await import('./recon.ts')).reconExport as Command,
  'unresolved:list': async () => (await import('./lists.ts')).unresolvedList as Command,
  'refunds:settle': async () => (await import('./unresolved.ts')).refundsSettle as Command,
  'refunds:resend': async () => (await import('./unresolved.ts')).refundsResend as Command,
  'settlements:run': async () => (await import('./settlements.ts')).settlementsRun as Command,
  'settlements:list': async () => (await import('./settlements.ts')).settlementsList as Command,
  'settlements:retry': async () => (await import('./settlements.ts')).settlementsRetry as Command,
  'settlements:cancel': async () => (await import('./settlements.ts')).settlementsCancel as Command,
  'vendor:add': async () => (await import('./vendors.ts')).vendorAdd as Command,
  'vendor:check': async () => (await import('./vendors.ts')).vendorCheck as Command,
  'vendor:list': async () => (await import('./lists.ts')).vendorList as Command,
  'vendor:disable': async () => (await import('./vendors.ts')).vendorDisable as Command,
  'vendor:remove': async () => (await import('./vendors.ts')).vendorRemove as Command,
  'vendor:conflicts': async () => (await import('./vendors.ts')).vendorConflicts as Command,
  'route:set': async () => (await import('./vendors.ts')).routeSet as Command,
  'route:list': async () => (await import('./lists.ts')).routeList as Command,
  'routes:explain': async () => (await import('./routes.ts')).routesExplain as Command,
  'banks:list': async () => (await import('./lists.ts')).banksList as Command,
  'banks:enable': async () => (await import('./master-data.ts')).banksEnable as Command,
  'banks:disable': async () => (await import('./master-data.ts')).banksDisable as Command,
  'ewallets:list': async () => (await import('./lists.ts')).ewalletsList as Command,
  'ewallets:enable': async () => (await import('./master-data.ts')).ewalletsEnable as Command,
  'ewallets:disable': async () => (await import('./master-data.ts')).ewalletsDisable as Command,
  'user:list': async () => (await import('./users.ts')).userList as Command,
  'user:issue-key': async () => (await import('./users.ts')).userIssueKey as Command,
  'user:revoke-key': async () => (await import('./users.ts')).userRevokeKey as Command,
  'simulate:pay': async () => (await import('./orders.ts')).simulatePay as Command,
  'webhooks:list': async () => (await import('./orders.ts')).webhooksList as Command,
  'webhooks:resend': async () => (await import('./orders.ts')).webhooksResend as Command,
  'webhooks:trigger': async () => (await import('./orders.ts')).webhooksTrigger as Command,
  'jobs:list': async () => (await import('./lists.ts')).jobsList as Command,
  'jobs:rerun': async () => (await import('./jobs.ts')).jobsRerun as Command,
  'jobs:ping': async () => (await import('./jobs.ts')).jobsPing as Command,
  'secrets:reseal': async () => (await import('./secrets.ts')).secretsReseal as Command,
};

/** Every command, in the help's order. */
export function loadAll(): Promise<Command[]> {
  return Promise.all(Object.values(COMMANDS).map((load) => load()));
}
