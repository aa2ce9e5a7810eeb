// Fault injection: rules set through /admin/faults, or one fault per request in X-Sim-Fault.
// A rule matches by operation and mode; the first matching rule whose `rate` roll passes is
// applied, and a rule with `count` is removed once it has been applied that many times.
// The middleware that applies them is here too, once for the native API and every dialect:
// each API only says how its own error bodies look.
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import { z } from 'zod';

export const REQUEST_OPS = ['createQris', 'queryQris', 'refund', 'queryRefund', 'disburse', 'queryDisbursement', 'inquireAccount'] as const;
export type RequestOp = (typeof REQUEST_OPS)[number];
export type Op = RequestOp | 'callback';

const REQUEST_MODES: readonly string[] = ['latency', 'error', 'timeout', 'reject', 'bad_qris', 'lost_payout', 'changed_amount', 'double_refund'];
/**
 * Money faults (gateways/simulator/report-dialect.ts): the vendor answers as usual but does the
 * wrong thing with the money, for reconciliation to find: forgets an accepted payout, pays
 * another amount, refunds twice. Each applies to the one operation named here.
 */
const MONEY_FAULTS: Readonly<Record<string, RequestOp>> = { lost_payout: 'disburse', changed_amount: 'disburse', double_refund: 'refund' };
const CALLBACK_MODES: readonly string[] = ['latency', 'duplicate_callback', 'out_of_order_callback', 'drop_callback'];
export const MODES = ['latency', 'error', 'timeout', 'reject', 'bad_qris', 'duplicate_callback', 'out_of_order_callback', 'drop_callback', 'lost_payout', 'changed_amount', 'double_refund'] as const;
export type Mode = (typeof MODES)[number];

export interface Fault {
  mode: Mode;
  latencyMs?: number;
  status?: number;
}

/** Whether a mode means anything for an operation; '*' rules only fire where it does. */
export function applies(mode: Mode, op: Op): boolean {
  if (op === 'callback') return CALLBACK_MODES.includes(mode);
  if (mode === 'bad_qris') return op === 'createQris' || op === 'queryQris';
  if (Object.hasOwn(MONEY_FAULTS, mode)) return op === MONEY_FAULTS[mode];
  return REQUEST_MODES.includes(mode);
}

export function isCallbackMode(mode: Mode): boolean {
  return CALLBACK_MODES.includes(mode) && mode !== 'latency';
}

export const faultRuleSchema = z
  .object({
    op: z.enum([...REQUEST_OPS, 'callback', '*']),
    mode: z.enum(MODES),
    latency_ms: z.number().int().min(0).max(600_000).optional(),
    status: z.number().int().min(400).max(599).optional(),
    rate: z.number().min(0).max(1).default(1),
    count: z.number().int().min(1).optional(),
  })
  .superRefine((rule, ctx) => {
    if (rule.op !== '*' && !applies(rule.mode, rule.op)) {
      ctx.addIssue({ code: 'custom', path: ['mode'], message: `mode ${rule.mode} does not apply to op ${rule.op}` });
    }
    if (rule.status === undefined) return;
    // error means "maybe done" (5xx) and reject "surely not done" (4xx): a status crossing
    // over would make the fault lie about what it simulates.
    if (rule.mode === 'error' && rule.status < 500) ctx.addIssue({ code: 'custom', path: ['status'], message: 'an error fault answers 5xx' });
    else if (rule.mode === 'reject' && rule.status >= 500) ctx.addIssue({ code: 'custom', path: ['status'], message: 'a reject fault answers 4xx' });
    else if (rule.mode !== 'error' && rule.mode !== 'reject') ctx.addIssue({ code: 'custom', path: ['status'], message: 'status applies to error and reject only' });
  });

export type FaultRule = z.output<typeof faultRuleSchema> & { id: string };

const toFault = (rule: { mode: Mode; latency_ms?: number; status?: number }): Fault => ({
  mode: rule.mode,
  latencyMs: rule.latency_ms,
  status: rule.status,
});

/** Parses `X-Sim-Fault: <mode>[;latency_ms=..;status=..]`. */
export function parseFaultHeader(value: string): { ok: true; fault: Fault } | { ok: false; error: string } {
  const [mode, ...params] = value.split(';').map((part) => part.trim());
  const raw: Record<string, unknown> = { op: '*', mode };
  for (const param of params) {
    const [key, number] = param.split('=');
    if (key !== 'latency_ms' && key !== 'status') return { ok: false, error: `X-Sim-Fault: unknown parameter ${key}` };
    raw[key] = Number(number);
  }
  const parsed = faultRuleSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { ok: false, error: `X-Sim-Fault: ${issue.path.join('.')}: ${issue.message}` };
  }
  return { ok: true, fault: toFault(parsed.data) };
}

export function createFaults() {
  let rules: FaultRule[] = [];
  let seq = 0;
  return {
    add(input: z.output<typeof faultRuleSchema>): FaultRule {
      const rule = { id: `flt_${++seq}`, ...input };
      rules.push(rule);
      return rule;
    },
    list: (): readonly FaultRule[] => rules,
    clear() {
      rules = [];
    },
    take(op: Op): Fault | null {
      for (const rule of rules) {
        if ((rule.op !== op && rule.op !== '*') || !applies(rule.mode, op)) continue;
        if (Math.random() >= rule.rate) continue;
        if (rule.count !== undefined && --rule.count === 0) rules = rules.filter((other) => other !== rule);
        return toFault(rule);
      }
      return null;
    },
  };
}

export type Faults = ReturnType<typeof createFaults>;

/** How one API words a fault's answers, in its own error shapes. */
export interface FaultAnswers {
  /** The refusal of a malformed or misplaced X-Sim-Fault header: thrown, so the API's error handler answers it. */
  invalid(message: string): Error;
  /** The body of an error fault (5xx: the vendor may have acted). */
  error(status: number): Record<string, unknown>;
  /** The body of a reject fault (4xx: the vendor surely did nothing). */
  reject(status: number): Record<string, unknown>;
  /** The status of a reject fault that names none. */
  rejectStatus: number;
}

export interface FaultDeps {
  faults: Faults;
  sleep(ms: number): Promise<void>;
  logger: Logger;
}

/**
 * The fault middleware of one operation: the request's X-Sim-Fault header, else the first
 * matching rule. Latency waits, then the request goes on; error and reject answer at once;
 * timeout and bad_qris ride along in res.locals.fault for the reply to act on. A callback mode
 * in the header rides along in res.locals.callbackFault, on an operation that causes a
 * callback only (`causesCallback`); elsewhere the header is refused.
 */
export function faultMiddleware(deps: FaultDeps, op: RequestOp, answers: FaultAnswers, causesCallback = false): RequestHandler {
  return async (req, res, next) => {
    let fault: Fault | null;
    const header = req.get('x-sim-fault');
    if (header !== undefined) {
      const parsed = parseFaultHeader(header);
      if (!parsed.ok) throw answers.invalid(parsed.error);
      fault = parsed.fault;
      if (causesCallback && isCallbackMode(fault.mode)) {
        res.locals.callbackFault = fault;
        return next();
      }
      if (!applies(fault.mode, op)) throw answers.invalid(`X-Sim-Fault: ${fault.mode} does not apply to ${op}`);
    } else {
      fault = deps.faults.take(op);
    }
    if (!fault) return next();
    deps.logger.info({ op, fault }, 'fault injected');
    switch (fault.mode) {
      case 'latency':
        await deps.sleep(fault.latencyMs ?? 1000);
        return next();
      case 'error': {
        const status = fault.status ?? 500;
        return void res.status(status).json(answers.error(status));
      }
      case 'reject': {
        const status = fault.status ?? answers.rejectStatus;
        return void res.status(status).json(answers.reject(status));
      }
      default:
        res.locals.fault = fault;
        return next();
    }
  };
}
