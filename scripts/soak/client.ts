// The load's HTTP client: one real request per call, over the same keep-alive connections a
// merchant's client would hold (so a killed web process shows up as reset connections, not
// only as refused ones). Every answer is counted by route and status, every failure to get
// one by its error code, for the report.
export type Answer =
  | { ok: true; status: number; json: any; text: string }
  /** No HTTP answer: refused, reset, timed out. The request may or may not have been done. */
  | { ok: false; error: string };

/** Longer than any answer Kasir gives on purpose (ORDER_CREATE_DEADLINE_MS is 10 s). */
const REQUEST_TIMEOUT_MS = 20_000;

export class Client {
  readonly counts = new Map<string, number>();
  /** Every answer in order (route, when it came, status or error): the failover drill's outage figures. */
  readonly timeline: Array<{ label: string; at: number; status: number | null }> = [];

  async request(label: string, url: string, init: RequestInit): Promise<Answer> {
    let answer: Answer;
    try {
      const response = await fetch(url, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
      const text = await response.text();
      let json: any = null;
      try {
        json = JSON.parse(text);
      } catch {}
      answer = { ok: true, status: response.status, json, text };
    } catch (err) {
      answer = { ok: false, error: errorCode(err) };
    }
    const key = `${label} ${answer.ok ? `${answer.status}${answer.json?.error?.code ? ` ${answer.json.error.code}` : ''}` : answer.error}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    this.timeline.push({ label, at: Date.now(), status: answer.ok ? answer.status : null });
    return answer;
  }
}

function errorCode(err: unknown): string {
  const e = err as { name?: string; cause?: { code?: string; name?: string } };
  return e.cause?.code ?? e.cause?.name ?? e.name ?? 'error';
}

/** Whether an answer leaves the outcome open: no answer, a 5xx, or 409 ORDER_PENDING_CONFIRMATION. */
export function isAmbiguous(answer: Answer): boolean {
  return !answer.ok || answer.status >= 500 || answer.json?.error?.code === 'ORDER_PENDING_CONFIRMATION';
}
