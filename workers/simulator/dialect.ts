// The seam between the native simulator (app.ts) and its vendor dialects (dialects/*.ts):
// each dialect speaks one real gateway's paths, auth, bodies and callbacks over the same store,
// faults and payer, so `simulate:pay` pays an order whichever dialect created it.
import type { Request, RequestHandler, Response } from 'express';
import type { z } from 'zod';
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

/** A request body read against a schema: its value, or why not (each API words the refusal its own way). */
export type BodyReading<T> =
  | { ok: true; data: T }
  | { ok: false; notJson: true }
  | { ok: false; notJson: false; field: string; message: string; missing: boolean };

/** Reads the raw JSON body (the app keeps bodies as bytes) against `schema`; the first problem is reported. */
export function readBody<T extends z.ZodType>(schema: T, req: Request): BodyReading<z.output<T>> {
  let json: unknown;
  try {
    json = JSON.parse((Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0)).toString('utf8'));
  } catch {
    return { ok: false, notJson: true };
  }
  const result = schema.safeParse(json);
  if (result.success) return { ok: true, data: result.data };
  const issue = result.error.issues[0];
  return { ok: false, notJson: false, field: issue.path.join('.') || 'body', message: issue.message, missing: issue.code === 'invalid_type' && issue.input === undefined };
}
