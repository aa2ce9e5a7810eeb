// The seam between the native simulator (app.ts) and its vendor dialects (dialects/*.ts):
// each dialect speaks one real gateway's paths, auth, bodies and callbacks over the same store,
// faults and payer, so `simulate:pay` pays an order whichever dialect created it.
import type { RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import type { SimulatorOptions } from './config.ts';
import type { Delivery } from './callbacks.ts';
import type { Fault, Faults, RequestOp } from './faults.ts';
import type { DisbursementRecord, QrRecord, Store } from './store.ts';
import type { Timers } from './timers.ts';

/** What a vendor dialect shares with the native simulator. */
export interface DialectContext {
  options: SimulatorOptions;
  logger: Logger;
  store: Store;
  faults: Faults;
  timers: Timers;
  /** Aborted when the simulator stops: outgoing callbacks pass it to got. */
  signal: AbortSignal;
  /**
   * The fault middleware of an operation (X-Sim-Fault header or a matching admin rule). Error
   * and reject faults answer with `errorBody` (the dialect's own error shape) when given.
   */
  inject(op: RequestOp, causesCallback?: boolean, errorBody?: (status: number, mode: 'error' | 'reject') => Record<string, unknown>): RequestHandler;
  /** Sends a callback in the dialect's own body and headers, with the shared retries and callback faults. */
  sendCallback(url: string, body: string, delivery: Delivery, fault: Fault | null): void;
  /** Answers unless a timeout fault holds the request (bad_qris corrupts `qris_string`). */
  reply(res: Response, status: number, body: Record<string, unknown>): void;
  /** Stores a new QR (its notifyPaid set) and starts its auto-pay timer when configured. */
  qrCreated(qr: QrRecord): void;
  /** Stores an accepted payout (its notifySettled set) and settles it after the configured delay. */
  disbursementAccepted(d: DisbursementRecord, callbackFault: Fault | null): void;
}
