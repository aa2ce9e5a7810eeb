// What the load asked for and what it was told: per idempotency key, every send, the resource
// the first 2xx answer named (the acknowledgement the audit holds Kasir to), and whether the
// outcome is still open (ambiguous: no answer, a 5xx, a pending confirmation). A later 2xx
// under the same key that names another resource is recorded as a mismatch at once.

export interface Keyed {
  key: string;
  /** The exact body sent under the key, every time. */
  raw: string;
  sends: number;
  /** Answers that left the outcome open (no answer, 5xx, pending confirmation). */
  ambiguous: number;
  /** Resource id of the first 2xx answer; null while nothing was acknowledged. */
  ackId: string | null;
  ackAt: number | null;
  /** A definite refusal (a 4xx the load did not expect), with its answer. */
  refused: string | null;
}

export interface OrderRecord extends Keyed {
  merchantOrderId: string;
  amount: number;
  ackRef: string | null;
  /** When the payer's payment was accepted by the simulator; null if never paid. */
  payAckAt: number | null;
  /** Why a payment was not made after all (the simulator no longer had the QR, ...). */
  payMissed: string | null;
  refundKey: string | null;
}

export interface RefundRecord extends Keyed {
  orderRef: string;
  orderId: string;
}

export interface PayoutRecord extends Keyed {
  /** Acknowledged by 409 DUPLICATE_IDEMPOTENCY_KEY after a send whose answer was lost. */
  existsByKey: boolean;
  expectFailure: boolean;
}

export interface ImportRecord {
  prefix: string;
  rows: number;
  /** Disbursement id per row key, from the first 200. */
  ackIds: Map<string, string>;
  sends: number;
  replayed: boolean;
}

export interface Mismatch {
  key: string;
  first: string;
  then: string;
}

export class Tally {
  readonly orders = new Map<string, OrderRecord>();
  readonly refunds = new Map<string, RefundRecord>();
  readonly payouts = new Map<string, PayoutRecord>();
  imports: ImportRecord | null = null;
  readonly mismatches: Mismatch[] = [];
  /** Answers the load had no reason to get (a 400 for a well-formed body, say). */
  readonly unexpected: string[] = [];

  /** Records a 2xx answer naming `id` under `record`'s key; a different id than before is a mismatch. */
  acknowledge(record: Keyed, id: string): boolean {
    if (record.ackId === null) {
      record.ackId = id;
      record.ackAt = Date.now();
      return true;
    }
    if (record.ackId !== id) this.mismatches.push({ key: record.key, first: record.ackId, then: id });
    return record.ackId === id;
  }

  refuse(record: Keyed, what: string) {
    record.refused = what;
    this.unexpected.push(`${record.key}: ${what}`);
  }

  /** Records whose outcome is still open. */
  open(): Keyed[] {
    const all: Keyed[] = [...this.orders.values(), ...this.refunds.values(), ...this.payouts.values()];
    return all.filter((r) => r.ackId === null && r.refused === null && !(r as PayoutRecord).existsByKey);
  }
}

export function newKeyed(key: string, raw: string): Keyed {
  return { key, raw, sends: 0, ambiguous: 0, ackId: null, ackAt: null, refused: null };
}
