// Sandbox credentials (issue 36): vendor:add refuses a vendor's test keys and sandbox hosts
// unless the operator marks the vendor --sandbox, and refuses production ones with the mark; a
// stack holding a marked vendor says so in vendor:list, /healthz and the web process's startup
// log line. Through the real CLI and the real API entry against a real database.
import t from 'tap';
import { testEnv } from '../helpers/config.ts';
import { testDatabase } from '../helpers/db.ts';
import { call, eventually } from '../helpers/http.ts';
import { ops as runOps } from '../helpers/processes.ts';
import { startLoggedProcess } from '../helpers/replicas.ts';

const env = testEnv(await testDatabase(t));
const ops = (...args: string[]) => runOps(env, ...args);
const xendit = (code: string, secretKey: string, ...more: string[]) =>
  ops('vendor:add', '--code', code, '--kind', 'xendit', '--base-url', 'https://api.xendit.co', '--secret-key', secretKey, '--callback-token', 'tok-12345678', ...more);
const midtrans = (code: string, baseUrl: string, serverKey: string, ...more: string[]) =>
  ops('vendor:add', '--code', code, '--kind', 'midtrans', '--base-url', baseUrl, '--server-key', serverKey, ...more);

t.test('sandbox credentials are refused without --sandbox, production ones with it', async (t) => {
  const testKey = await xendit('xnd-test', 'xnd_development_abc123');
  t.equal(testKey.code, 1);
  t.match(testKey.stderr, /--secret-key \(xnd_development_…\): sandbox credentials.*pass --sandbox/);
  const liveKeyMarked = await xendit('xnd-live', 'xnd_production_abc123', '--sandbox');
  t.equal(liveKeyMarked.code, 1);
  t.match(liveKeyMarked.stderr, /--secret-key \(xnd_production_…\): production credentials, not a sandbox; drop --sandbox/);

  const sbKey = await midtrans('mid-test', 'https://api.midtrans.com', 'SB-Mid-server-abc');
  t.equal(sbKey.code, 1, 'a sandbox key against a production host: two environments mixed');
  t.match(sbKey.stderr, /--server-key \(SB-Mid-…\) belong to a sandbox and --base-url \(api\.midtrans\.com\) to production/);
  const sbHost = await midtrans('mid-test', 'https://api.sandbox.midtrans.com', 'plain-key-abc123');
  t.equal(sbHost.code, 1, 'a sandbox host alone is enough');
  t.match(sbHost.stderr, /--base-url \(api\.sandbox\.midtrans\.com\): sandbox credentials/);
  const sbIris = await midtrans('mid-test', 'https://api.midtrans.com', 'Mid-server-abc123', '--iris-base-url', 'https://app.sandbox.midtrans.com/iris',
    '--iris-creator-key', 'IRIS-creator-1', '--iris-approver-key', 'IRIS-approver-1', '--iris-merchant-key', 'IRIS-merchant-1');
  t.equal(sbIris.code, 1);
  t.match(sbIris.stderr, /--iris-base-url \(app\.sandbox\.midtrans\.com\) belong to a sandbox/);
  const liveMarked = await midtrans('mid-live', 'https://api.midtrans.com', 'Mid-server-abc123', '--sandbox');
  t.equal(liveMarked.code, 1);
  t.match(liveMarked.stderr, /drop --sandbox/);

  const simulator = await ops('vendor:add', '--code', 'sim-x', '--kind', 'simulator', '--base-url', 'http://127.0.0.1:4010', '--secret', 'a-secret-of-its-own', '--sandbox');
  t.not(simulator.code, 0, 'the simulator is the development gateway, not a sandbox');
  t.match(simulator.stderr, /sandbox/);

  const list = JSON.parse((await ops('vendor:list', '--json')).stdout);
  t.same(list.vendors, [], 'nothing refused was saved');

  // Controls: each environment's credentials with the mark that tells the truth.
  const live = await xendit('xnd-live', 'xnd_production_abc123', '--json');
  t.equal(live.code, 0, live.stderr);
  t.equal(JSON.parse(live.stdout).sandbox, false);
  const sandbox = await midtrans('mid-test', 'https://api.sandbox.midtrans.com', 'SB-Mid-server-abc', '--sandbox', '--iris-base-url', 'https://app.sandbox.midtrans.com/iris',
    '--iris-creator-key', 'IRIS-creator-1', '--iris-approver-key', 'IRIS-approver-1', '--iris-merchant-key', 'IRIS-merchant-1', '--json');
  t.equal(sandbox.code, 0, sandbox.stderr);
  t.equal(JSON.parse(sandbox.stdout).sandbox, true);
});

t.test('a stack holding a sandbox vendor says so in vendor:list, /healthz and its startup log line', async (t) => {
  // Left by the test above: xnd-live (production) and mid-test (marked --sandbox).
  const listed = JSON.parse((await ops('vendor:list', '--json')).stdout).vendors;
  t.same(listed.map((v: { code: string; sandbox: boolean }) => [v.code, v.sandbox]), [['mid-test', true], ['xnd-live', false]]);
  const text = (await ops('vendor:list')).stdout.split('\n');
  t.match(text.find((l) => l.startsWith('mid-test')), /SANDBOX$/);
  t.notMatch(text.find((l) => l.startsWith('xnd-live')), /SANDBOX/);

  const web = await startLoggedProcess(t, 'web', 'api/server.ts', [], { ...env, LOG_LEVEL: 'info' });
  // The line is written just before the ready message is sent; stdout may deliver it after.
  const listening = await eventually(async () => web.logs.find((l) => typeof l.msg === 'string' && l.msg.startsWith('api listening')), 'the listening line');
  t.match(listening, { level: 40, sandboxVendors: ['mid-test'], msg: /SANDBOX vendors \(mid-test\): take no real money/ });
  const url = `http://127.0.0.1:${web.message.port}`;
  t.same((await call(url, { path: '/healthz' })).json, { status: 'ok', db: 'ok', sandbox: true });

  // Control: once the sandbox vendor is gone, the stack no longer says so.
  t.equal((await ops('vendor:remove', '--code', 'mid-test')).code, 0);
  t.same((await call(url, { path: '/healthz' })).json, { status: 'ok', db: 'ok' });
});
