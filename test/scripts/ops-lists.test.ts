// The lists support scripts call in loops (scripts/ops/lists.ts) answer on node-postgres alone:
// a list that pulled in slonik, zod or pg-boss would cost about 250 ms more CPU per call
// (docs/performance.md, "Ops CLI"). Each list runs as operators run it, with a module-resolution
// hook (node:module registerHooks) reporting every package it loaded.
import t from 'tap';
import { testEnv } from '../helpers/config.ts';
import { testDatabase } from '../helpers/db.ts';
import { ops as runOps } from '../helpers/processes.ts';

const databaseUrl = await testDatabase(t);

// Prints, on exit, the packages under node_modules the process resolved (one JSON line on stderr).
const HOOK = `
import { registerHooks } from 'node:module';
const seen = new Set();
registerHooks({ resolve(specifier, context, next) {
  const found = next(specifier, context);
  const m = /node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(found.url);
  if (m) seen.add(m[1]);
  return found;
} });
process.on('exit', () => process.stderr.write('\\nLOADED ' + JSON.stringify([...seen]) + '\\n'));
`;
const env = testEnv(databaseUrl, { NODE_OPTIONS: `--import=data:text/javascript,${encodeURIComponent(HOOK)}` });

const LISTS: [string[], (out: any) => boolean][] = [
  [['banks:list'], (out) => out.banks.some((b: { short_code: string }) => b.short_code === 'BCA')],
  [['ewallets:list'], (out) => Array.isArray(out.ewallets) && out.ewallets.length > 0],
  [['vendor:list'], (out) => Array.isArray(out.vendors)],
  [['route:list'], (out) => Array.isArray(out.routes)],
  [['unresolved:list'], (out) => Array.isArray(out)],
  [['jobs:list', '--limit', '1'], (out) => Array.isArray(out.jobs)],
];

for (const [args, answered] of LISTS) {
  t.test(`${args[0]} answers without slonik, zod or pg-boss`, async (t) => {
    const res = await runOps(env, ...args, '--json');
    t.equal(res.code, 0, `exit 0 (stderr: ${res.stderr.split('\nLOADED')[0].slice(0, 300)})`);
    t.ok(answered(JSON.parse(res.stdout)), `answered: ${res.stdout.slice(0, 200)}`);
    const line = /^LOADED (.*)$/m.exec(res.stderr);
    t.ok(line, 'the hook reported what was loaded');
    const loaded: string[] = JSON.parse(line![1]);
    t.ok(loaded.includes('pg'), 'node-postgres read the rows');
    for (const heavy of ['slonik', 'zod', 'pg-boss']) t.notOk(loaded.includes(heavy), `${heavy} not loaded`);
    t.notOk(loaded.some((p) => p.startsWith('@slonik/')), "none of slonik's packages loaded");
  });
}

t.test('a write command still runs on the pool (the hook sees slonik there)', async (t) => {
  const res = await runOps(env, 'banks:disable', '--code', 'BCA', '--json');
  t.equal(res.code, 0, `exit 0 (stderr: ${res.stderr.split('\nLOADED')[0].slice(0, 300)})`);
  t.ok(JSON.parse(/^LOADED (.*)$/m.exec(res.stderr)![1]).includes('slonik'), 'the check can tell the two apart');
  const listed = JSON.parse((await runOps(env, 'banks:list', '--json')).stdout);
  t.equal(listed.banks.find((b: { short_code: string }) => b.short_code === 'BCA').is_enabled, false, 'the list reads what the pool wrote');
});
