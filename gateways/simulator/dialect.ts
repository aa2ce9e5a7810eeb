// The seam between the native simulator (app.ts) and its vendor dialects (dialects/*.ts):
// each dialect speaks one real gateway's paths, auth, bodies and callbacks over the same store,
// faults and payer, so `simulate:pay` pays an order whichever dialect created it.
import type { Request, RequestHandler, Response } from 'express';
import type { z } from 'zod';
import type { Logger } from 'pino';
import type { SimulatorOptions } from './config.ts';
import type { Channel } from './callbacks.ts';
import type { Fault, FaultAnswers, Faults, RequestOp } from './faults.ts';
import type { Journal } from './journal.ts';
import type { DialectName, DisbursementRecord, QrRecord, Store } from './store.ts';
import type { Deadlines, Timers } from './timers.ts';

/**
 * What a dialect does on the app's behalf, registered once by name so that records and callbacks
 * it made before a restart are still its own after it.
 */
export interface DialectHooks {
  /** How its callbacks are signed (per attempt) and whose stats hear the answers. */
  channel: Channel;
  /** Sends the payment callback of one of its QRs, just paid. */
  paid?(qr: QrRecord, callbackFault: Fault | null): void;
  /** Sends the final-status callback of one of its payouts, just settled. */
  settled?(d: DisbursementRecord, callbackFault: Fault | null): void;
}

/** What a vendor dialect shares with the native simulator. */
export interface DialectContext {
  options: SimulatorOptions;
  logger: Logger;
  store: Store;
  /** For the dialect's own records (journal kinds named `<dialect>.<what>`), loaded at start. */
  journal: Journal;
  faults: Faults;
  timers: Timers;
  /** Delayed work a restart must not lose; actions named `<dialect>.<what>`. */
  deadlines: Deadlines;
  /** Aborted when the simulator stops: outgoing callbacks pass it to got. */
  signal: AbortSignal;
  /**
   * The fault middleware of an operation (X-Sim-Fault header or a matching admin rule), answering
   * in the dialect's own error shapes (faults.ts faultMiddleware).
   */
  inject(op: RequestOp, answers: FaultAnswers, causesCallback?: boolean): RequestHandler;
  /** Registers the dialect's hooks; called once, when the dialect is made. */
  register(name: DialectName, hooks: DialectHooks): void;
  /**
   * Sends a callback in the dialect's own body through its channel, with the shared retries and
   * callback faults (`takesFaults` false: fault rules pass it by, only `fault` applies).
   */
  sendCallback(name: DialectName, url: string, body: string, about: Record<string, string>, fault: Fault | null, takesFaults?: boolean): void;
  /** Answers unless a timeout fault holds the request (bad_qris corrupts `qris_string`). */
  reply(res: Response, status: number, body: Record<string, unknown>): void;
  /** Stores a new QR (its `dialect` set) and starts its auto-pay deadline when configured. */
  qrCreated(qr: QrRecord): void;
  /** Stores an accepted payout (its `dialect` set) and settles it after the configured delay. */
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
