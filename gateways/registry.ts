// Picks the adapter for a configured vendor by its kind. A kind without an adapter is a
// configuration error: it throws rather than letting orders reach a vendor nobody can talk to.
// Every adapter comes back measured (one place for every vendor): each call's duration and
// outcome, by vendor code and operation; a call that throws counts as unknown. Calls that start
// something (a QR, a payout) are also counted for adaptive routing (db/vendor-outcomes.ts).
import { createHash } from 'node:crypto';
import { observeVendorCall } from '../db/metrics.ts';
import { recordVendorOutcome } from '../db/vendor-outcomes.ts';
import type { Gateway, Outcome, VendorRecord } from './gateway.ts';
import { createMidtransGateway } from './midtrans/connector.ts';
import { createSimulatorGateway } from './simulator/connector.ts';
import { createSnapGateway } from './snap/connector.ts';
import { createXenditGateway } from './xendit/connector.ts';

type AdapterFactory = (vendor: VendorRecord, options: { timeoutMs?: number }) => Gateway;

const adapters: Record<string, AdapterFactory> = {
  simulator: createSimulatorGateway,
  xendit: createXenditGateway,
  midtrans: createMidtransGateway,
  snap: createSnapGateway,
};

/** The kinds `vendor:add` accepts: one adapter each. */
export const vendorKinds = Object.keys(adapters);

// Adapters built, by everything one is built from. Building one costs more than many calls
// through it (a signing key prepared, a child logger, the measured wrappers), and the vendor
// worker asks for one per job (with the simulator the saving is within the bench's noise;
// docs/performance.md). A vendor whose base URL or
// credentials changed is another key, so it gets an adapter of its own; adapters hold no state
// of a call between calls (SNAP's access tokens are kept by the client module, by vendor).
const built = new Map<string, Gateway>();
/** Vendor configurations are a handful; this only bounds memory if they churn. */
const BUILT_MAX = 1_000;

export function gatewayFor(vendor: VendorRecord, options: { timeoutMs?: number } = {}): Gateway {
  // A digest, so the map's keys hold no credentials (an old secret's adapter goes when the map is cleared).
  const key = createHash('sha256').update(JSON.stringify([vendor.kind, vendor.code, vendor.baseUrl, vendor.credentials, options.timeoutMs ?? null])).digest('base64');
  const hit = built.get(key);
  if (hit) return hit;
  const create = adapters[vendor.kind];
  if (!create) throw new Error(`vendor ${vendor.code}: no adapter for kind ${vendor.kind}`);
  const gateway = measured(vendor.code, create(vendor, options));
  if (built.size >= BUILT_MAX) built.clear();
  built.set(key, gateway);
  return gateway;
}

function measured(vendor: string, gateway: Gateway): Gateway {
  const timed =
    <A, T>(operation: string, call: (input: A) => Promise<Outcome<T>>, routed?: (input: A) => { method: string; destination: string | null }) =>
    async (input: A): Promise<Outcome<T>> => {
      const started = performance.now();
      let outcome: Outcome<T>['kind'] = 'unknown';
      // A refusal of the payout itself (the bank names another holder) says nothing of the vendor.
      let vendorAnswered = false;
      try {
        const result = await call(input);
        outcome = result.kind;
        vendorAnswered = result.kind === 'failed' && result.payoutRefusal !== undefined;
        return result;
      } finally {
        const ms = performance.now() - started;
        observeVendorCall(vendor, operation, outcome, ms / 1000);
        if (routed) recordVendorOutcome({ vendor, ...routed(input), outcome: vendorAnswered ? 'ok' : outcome, ms });
      }
    };
  return {
    createQris: timed('create_qris', (input) => gateway.createQris(input), () => ({ method: 'QRIS', destination: null })),
    queryQris: (reference, vendorOrderId) => timed('query_qris', (ref: string) => gateway.queryQris(ref, vendorOrderId))(reference),
    refund: timed('refund', (input) => gateway.refund(input)),
    queryRefund: timed('query_refund', (input) => gateway.queryRefund(input)),
    disburse: timed('disburse', (input) => gateway.disburse(input), (input) => ({ method: input.channel, destination: input.bankCode ?? input.ewalletCode })),
    queryDisbursement: (reference, vendorDisbursementId) => timed('query_disbursement', (ref: string) => gateway.queryDisbursement(ref, vendorDisbursementId))(reference),
    inquireAccount: timed('inquire_account', (input) => gateway.inquireAccount(input)),
    parseCallback: (headers, rawBody, path) => gateway.parseCallback(headers, rawBody, path),
    answerCallback: gateway.answerCallback?.bind(gateway),
    answerRequest: gateway.answerRequest?.bind(gateway),
    check: () => gateway.check(),
    reportDay: gateway.reportDay?.bind(gateway),
    paymentCallbacksAreHints: gateway.paymentCallbacksAreHints,
  };
}
