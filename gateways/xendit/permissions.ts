// What `ops vendor:check` asks Xendit: one probe per permission Kasir's key will use, none of
// which changes anything at Xendit. A Xendit secret key carries per-product permissions; a key
// made without one of them passes a balance read and then fails its first use of the missing
// one (a key without Transaction read fails every nightly reconciliation). So each API Kasir
// calls is probed:
// - reads of a made-up id or reference: 404 (or an empty list) means the key may read there;
// - writes with an empty body: Xendit checks the key's permission before it validates the
//   body, so a 400 validation error means the key may write there, and nothing is created.
// A 403 (REQUEST_FORBIDDEN_ERROR) names the permission to grant in the dashboard.
import type { Outcome } from '../gateway.ts';
import type { HttpAnswer } from '../http.ts';
import { failed, ok, unknown } from '../results.ts';
import { errorBody, PATHS } from './transforms.ts';

type Request = (method: 'GET' | 'POST', path: string, payload?: object) => Promise<Outcome<HttpAnswer>>;

interface Probe {
  /** What the key may do, as the operator grants it in Xendit's dashboard. */
  permission: string;
  /** What Kasir uses it for. */
  use: string;
  method: 'GET' | 'POST';
  path: string;
  /** The answers that prove the permission (a 2xx always does). */
  proves: (status: number) => boolean;
}

const MADE_UP = 'kasir-permission-check';

export const PROBES: readonly Probe[] = [
  { permission: 'Balance: Read', use: 'balance read', method: 'GET', path: PATHS.balance, proves: () => false },
  {
    permission: 'Transaction: Read',
    use: 'transactions list (daily reconciliation)',
    method: 'GET',
    path: '/transactions?limit=1&currency=IDR',
    proves: () => false,
  },
  { permission: 'Money-in: Read', use: 'QR code read (payment confirmation)', method: 'GET', path: PATHS.qrCode(`qr_${MADE_UP}`), proves: (s) => s === 404 },
  { permission: 'Money-in: Write', use: 'QR code create and refunds', method: 'POST', path: PATHS.qrCodes, proves: (s) => s === 400 },
  { permission: 'Money-out: Read', use: 'payout read (payout confirmation)', method: 'GET', path: PATHS.payoutsByReference(MADE_UP), proves: (s) => s === 404 },
  { permission: 'Money-out: Write', use: 'payout create', method: 'POST', path: PATHS.payouts, proves: (s) => s === 400 },
];

/** Every probe, in order: ok with one line per probe, or failed/unknown listing what is missing. */
export async function checkPermissions(request: Request): Promise<Outcome<string>> {
  const proved: string[] = [];
  const refused: string[] = [];
  const unclear: string[] = [];
  for (const probe of PROBES) {
    const answer = await request(probe.method, probe.path, probe.method === 'POST' ? {} : undefined);
    if (answer.kind !== 'ok') {
      // Unreachable or no answer: every probe would say the same.
      return { kind: answer.kind, reason: `${probe.use}: ${answer.reason}` };
    }
    const { status, body } = answer.value;
    const error = errorBody.safeParse(body);
    const said = `HTTP ${status}${error.success ? ` ${error.data.error_code}` : ''}`;
    if (status === 401) return failed(`${said}: the secret key is not valid`);
    if ((status >= 200 && status < 300) || probe.proves(status)) proved.push(`${probe.use} (${probe.permission})`);
    else if (status === 403) refused.push(`${probe.use}: ${said}; grant the key "${probe.permission}"`);
    else unclear.push(`${probe.use}: ${said}`);
  }
  if (refused.length) return failed(`missing permissions: ${refused.join('; ')}`);
  if (unclear.length) return unknown(`answers that prove nothing: ${unclear.join('; ')}`);
  return ok(`the key may: ${proved.join('; ')}`);
}
