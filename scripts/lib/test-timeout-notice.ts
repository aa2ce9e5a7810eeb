// Loaded into every test process by npm test (scripts/test.ts passes it to tap as --node-arg).
// When a file outlives tap's per-file timeout, tap asks it over IPC to stop ({ tapAbort:
// 'timeout' }) and reports `not ok - timeout!`, which reads like a failure of the code. On a
// busy machine it usually is not: this says so on stderr at once, and writes the file's name to
// KASIR_TEST_TIMEOUTS, from which the runner repeats it after tap's summary.
import { appendFileSync } from 'node:fs';
import { relative } from 'node:path';

const file = relative(process.cwd(), process.argv[1] ?? '');
const seconds = process.env.KASIR_TEST_TIMEOUT_SECONDS ?? '?';

export function timeoutNotice(file: string, seconds: string): string {
  return `${file} was stopped by the ${seconds} s per-file timeout, not failed by an assertion`;
}

if (process.channel) {
  process.on('message', (msg: unknown) => {
    if ((msg as { tapAbort?: unknown } | null)?.tapAbort !== 'timeout') return;
    process.stderr.write(`\n${timeoutNotice(file, seconds)}\n`);
    if (process.env.KASIR_TEST_TIMEOUTS) appendFileSync(process.env.KASIR_TEST_TIMEOUTS, `${file}\n`);
  });
  // Listening must not keep a finished test process alive (tap unrefs its own listener alike).
  process.channel.unref();
}
