// npm test on a small machine (scripts/test.ts): the preflight answers before the type check
// (package.json's test script is the runner alone; it type-checks after the preflight);
// `--available` runs what the machine can and names the files it leaves out; a file stopped by
// tap's per-file timeout is named as stopped, not failed (scripts/lib/test-timeout-notice.ts).
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ROOT } from '../../scripts/lib/local.ts';
import { AVAILABLE_FLAG, plan, selectedFiles, type Machine } from '../../scripts/lib/test-preflight.ts';

const tools = ['/usr/bin/curl', '/usr/bin/openssl', '/usr/bin/sha256sum', '/usr/bin/base64', '/bin/bash', '/usr/bin/php', '/usr/bin/go'];
const stock: Machine = { env: { PATH: '/usr/local/bin:/usr/bin:/bin' }, exists: (path) => tools.includes(path) };

interface Ran { code: number; stdout: string; stderr: string }
const run = (command: string, args: string[], env: NodeJS.ProcessEnv = {}) => new Promise<Ran>((resolve) => {
  // Without this tap child's TAP_* variables: the runs below are top-level, as from a terminal.
  const outer = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TAP')));
  execFile(command, args, { cwd: ROOT, env: { ...outer, ...env }, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
    resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
  });
});

t.test('npm test is the runner alone: the preflight comes before the type check', async (t) => {
  const pkg = JSON.parse(await readFile(`${ROOT}package.json`, 'utf8')) as { scripts: Record<string, string> };
  t.equal(pkg.scripts.test, 'node scripts/test.ts', 'no type check ahead of the runner');
  const ran = await run('npm', ['test', '--', 'test/checkout/checkout.test.ts'], { CHROMIUM_PATH: '/nonexistent/chromium' });
  t.equal(ran.code, 1);
  t.match(ran.stderr, /this machine lacks what some test files need[\s\S]*- Chromium, for test\/checkout\/checkout\.test\.ts/);
  t.match(ran.stderr, /npm test -- --available/, 'the message names the way to run the rest');
  t.notMatch(ran.stderr, /npm test: typecheck/, 'stopped before the type check');
});

t.test('--available runs every file whose needs are met and names the others', async (t) => {
  const all = selectedFiles([], ROOT);
  const p = plan([AVAILABLE_FLAG, '--reporter=tap'], ROOT, stock);
  t.same(p.missing, [], 'nothing stops the run');
  t.same(p.leftOut, [
    { file: 'test/checkout/checkout.test.ts', what: 'Chromium' },
    { file: 'test/db/pgbouncer.test.ts', what: 'PgBouncer' },
    { file: 'test/db/replica.test.ts', what: 'PgBouncer' },
  ]);
  t.same(p.tapArgs, ['--reporter=tap', ...all.filter((f) => !p.leftOut.some((l) => l.file === f))], 'tap gets the other files by name');
  t.same(plan(['test/api/auth.test.ts', AVAILABLE_FLAG], ROOT, stock), { tapArgs: ['test/api/auth.test.ts'], missing: [], leftOut: [] }, 'named files that can run, run as named');
  t.same(plan(['test/db/pgbouncer.test.ts'], ROOT, stock).missing.map((m) => m.what), ['PgBouncer'], 'without the flag a missing need still stops the run');

  // Through the runner: every chosen file lacks something, so it stops before the type check.
  const ran = await run('npm', ['test', '--', AVAILABLE_FLAG, 'test/checkout/checkout.test.ts'], { CHROMIUM_PATH: '/nonexistent/chromium' });
  t.equal(ran.code, 1, 'nothing left to run');
  t.match(ran.stderr, /npm test --available: 1 file\(s\) left out[^\n]*\n\s+- test\/checkout\/checkout\.test\.ts: Chromium/);
  t.notMatch(ran.stderr, /npm test: typecheck/);
});

t.test('a file stopped by the per-file timeout says so', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'kasir-timeout-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  // tap as scripts/test.ts starts it (the same --node-arg and variables), with a short timeout.
  const ran = await run(`${ROOT}node_modules/.bin/tap`, [
    `--node-arg=--import=${ROOT}scripts/lib/test-timeout-notice.ts`, '--timeout=15', '--reporter=tap', 'test/fixtures/never-ends.ts',
  ], { KASIR_TEST_TIMEOUTS: join(dir, 'timeouts'), KASIR_TEST_TIMEOUT_SECONDS: '15', PATH: `${ROOT}node_modules/.bin:${process.env.PATH}` });
  t.not(ran.code, 0, 'tap still fails the run');
  t.match(ran.stdout, /not ok \d+ - timeout!/, 'tap\'s own report');
  t.match(ran.stderr, /test\/fixtures\/never-ends\.ts was stopped by the 15 s per-file timeout, not failed by an assertion/);
  t.equal(await readFile(join(dir, 'timeouts'), 'utf8'), 'test/fixtures/never-ends.ts\n', 'named for the runner\'s closing summary');
});
