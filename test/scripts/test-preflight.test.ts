// npm test's preflight (scripts/lib/test-preflight.ts): before Postgres starts, it lists what the
// chosen test files need and the machine lacks (Chromium, PgBouncer, the README's shell tools),
// with how to install each; files that need nothing missing run as before.
import t from 'tap';
import { missingFor, preflightMessage, selectedFiles, type Machine } from '../../scripts/lib/test-preflight.ts';
import { ROOT } from '../../scripts/lib/local.ts';

const stock = (present: string[], env: Record<string, string> = {}): Machine => ({
  env: { PATH: '/usr/local/bin:/usr/bin:/bin', ...env },
  exists: (path) => present.includes(path),
});
const tools = ['/usr/bin/curl', '/usr/bin/openssl', '/usr/bin/sha256sum', '/usr/bin/base64', '/bin/bash', '/usr/bin/php', '/usr/bin/go'];

t.test('a stock machine running the whole suite is told what to install, before the run', (t) => {
  const all = selectedFiles([], ROOT);
  t.ok(all.includes('test/checkout/checkout.test.ts') && all.includes('test/db/pgbouncer.test.ts'), `${all.length} files`);
  const missing = missingFor(all, stock(tools));
  t.same(missing.map((m) => m.what), ['Chromium', 'PgBouncer']);
  const message = preflightMessage(missing, all);
  t.match(message, /- Chromium, for test\/checkout\/checkout\.test\.ts\n\s+install: apt-get install chromium/);
  t.match(message, /- PgBouncer, for test\/db\/pgbouncer\.test\.ts, test\/db\/replica\.test\.ts\n\s+install: apt-get install pgbouncer/);
  t.match(message, /run other files: npm test -- /);
  t.end();
});

t.test('found on PATH, at its usual path or by its variable; only the chosen files count', (t) => {
  const all = selectedFiles([], ROOT);
  t.same(missingFor(all, stock([...tools, '/usr/bin/chromium', '/usr/sbin/pgbouncer'])), [], 'Debian paths');
  t.same(missingFor(all, stock([...tools, '/usr/local/bin/pgbouncer', '/opt/chrome'], { CHROMIUM_PATH: '/opt/chrome' })), [], 'PATH and CHROMIUM_PATH');
  t.same(missingFor(all, stock([...tools, '/usr/bin/chromium', '/usr/sbin/pgbouncer'], { CHROMIUM_PATH: '/nope' })).map((m) => m.what), ['Chromium'], 'a variable naming nothing');
  t.same(missingFor(['test/api/auth.test.ts'], stock([])), [], 'a file needing nothing runs on a bare machine');
  t.same(missingFor(['test/scripts/readme.test.ts'], stock(tools.filter((p) => !p.endsWith('openssl')))).map((m) => m.what), [
    'curl, openssl, sha256sum and base64 (the README walkthrough runs them)',
  ], 'the README test needs every one of its tools');
  t.same(selectedFiles(['--reporter=tap', './test/api/auth.test.ts'], ROOT), ['test/api/auth.test.ts'], 'named files, as tap gets them');
  t.end();
});
