// CLI bench: what one ops command costs to start and answer, as a support script calling it in a
// loop pays it. Each command that reads a row or a short list runs --runs times, one after
// another, as `node scripts/ops.ts <command>` against a migrated bench database; reported per
// command: the CPU of the process (user + system, from this process's waited-for children in
// /proc/self/stat, 10 ms ticks) and its wall time, for the first run (Node's compile cache
// empty: a fresh NODE_COMPILE_CACHE directory) and the median of the rest (cache warm). Also
// `jobs:rerun` with 200 ids in one call against one id, each --runs times.
//
//   npm run bench -- cli [--runs 10] [--ephemeral] [--json]
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { defaultBrand } from '../../db/brands.ts';
import { createMerchant } from '../../db/merchants.ts';
import { ROOT } from '../lib/local.ts';
import { databaseOptions, runFacts } from './database.ts';
import { closeSession, openSession, positive } from './session.ts';

/** Commands that read one row or a short list: what support scripts call most. */
const COMMANDS: string[][] = [['vendor:list'], ['route:list'], ['jobs:list', '--limit', '1'], ['unresolved:list'], ['banks:list']];
/** The CPU budget per command (issue 40): a command that reads one row answers within it. */
const BUDGET_MS = 300;

/** CPU of this process's waited-for children so far, in ms (cutime + cstime, fields 16 and 17). */
async function childrenCpuMs(): Promise<number> {
  const stat = await readFile('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): cutime is field 16, cstime field 17.
  return (Number(fields[13]) + Number(fields[14])) * 10;
}

async function runOps(args: string[], env: Record<string, string>, input?: string): Promise<{ code: number | null; wallMs: number; cpuMs: number }> {
  const cpuBefore = await childrenCpuMs();
  const started = performance.now();
  const child = spawn(process.execPath, [`${ROOT}scripts/ops.ts`, ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: [input === undefined ? 'ignore' : 'pipe', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  if (input !== undefined) child.stdin!.end(input);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const wallMs = performance.now() - started;
  if (code !== 0 && code !== 1) throw new Error(`ops ${args.join(' ')} exited ${code}: ${err.slice(0, 500)}`);
  return { code, wallMs, cpuMs: (await childrenCpuMs()) - cpuBefore };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)] : 0;
};

export async function run(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { runs: { type: 'string', default: '10' }, ...databaseOptions, json: { type: 'boolean', default: false } },
    strict: true,
  });
  const runs = positive('runs', values.runs);
  const s = await openSession({ ephemeral: values.ephemeral, durable: values.durable, stats: false });
  const cache = await mkdtemp(path.join(tmpdir(), 'kasir-cli-bench-'));
  try {
    await createMerchant(s.pool, s.sealer, { name: 'Toko CLI', settlementType: 'WALLET', brandId: (await defaultBrand(s.pool)).id, webhookSecret: null, notifyUrl: null });
    const env = { ...s.common, NODE_COMPILE_CACHE: cache };
    const commands = [];
    for (const command of COMMANDS) {
      const times = [];
      for (let i = 0; i < runs; i++) times.push(await runOps(command, env));
      const warm = times.slice(1);
      commands.push({
        command: `ops ${command.join(' ')}`,
        first_cpu_ms: times[0].cpuMs,
        first_wall_ms: Math.round(times[0].wallMs),
        cpu_ms: median(warm.map((t) => t.cpuMs)),
        wall_ms: Math.round(median(warm.map((t) => t.wallMs))),
        within_budget: median(warm.map((t) => t.cpuMs)) <= BUDGET_MS,
      });
    }
    // 200 ids (none of them a job: each is reported skipped, the command's whole path still runs),
    // --runs times each way like the lists: the lists no longer load what jobs:rerun does (slonik,
    // pg-boss), so its first run is the one that fills the compile cache for them.
    const ids = Array.from({ length: 200 }, () => randomUUID());
    const manyRuns = [];
    const oneRuns = [];
    for (let i = 0; i < runs; i++) {
      manyRuns.push(await runOps(['jobs:rerun', '--stdin'], env, ids.join('\n')));
      oneRuns.push(await runOps(['jobs:rerun', '--id', ids[0]], env));
    }
    const many = { cpuMs: median(manyRuns.slice(1).map((r) => r.cpuMs)), wallMs: median(manyRuns.slice(1).map((r) => r.wallMs)) };
    const one = { cpuMs: median(oneRuns.slice(1).map((r) => r.cpuMs)), wallMs: median(oneRuns.slice(1).map((r) => r.wallMs)) };
    const report = {
      bench: 'cli',
      ...runFacts(s.db, s.loadBefore),
      runs,
      budget_cpu_ms: BUDGET_MS,
      commands,
      rerun: {
        ids: ids.length,
        first_cpu_ms: manyRuns[0].cpuMs,
        one_call_cpu_ms: many.cpuMs,
        one_call_wall_ms: Math.round(many.wallMs),
        one_id_cpu_ms: one.cpuMs,
        one_id_wall_ms: Math.round(one.wallMs),
      },
    };
    if (values.json) {
      process.stdout.write(`${JSON.stringify(report)}\n`);
      return;
    }
    const lines = [
      `cli bench: each command ${runs} times in a row (first with Node's compile cache empty), CPU of the ops process (10 ms ticks)`,
      `machine   ${report.machine.cores} cores, load ${report.machine.load_before} → ${report.machine.load_after}, Node ${report.machine.node}, PostgreSQL ${report.machine.postgres}`,
      '',
      `${'command'.padEnd(28)} ${'first: CPU / wall ms'.padEnd(22)} then (median): CPU / wall ms   ≤ ${BUDGET_MS} ms CPU`,
      ...commands.map((c) => `${c.command.padEnd(28)} ${`${c.first_cpu_ms} / ${c.first_wall_ms}`.padEnd(22)} ${`${c.cpu_ms} / ${c.wall_ms}`.padEnd(30)} ${c.within_budget ? 'yes' : 'NO'}`),
      '',
      `jobs:rerun with ${ids.length} ids on stdin, one call (median of the last ${runs - 1}): ${many.cpuMs} ms CPU / ${Math.round(many.wallMs)} ms wall; one id: ${one.cpuMs} / ${Math.round(one.wallMs)} ms; the first call ${manyRuns[0].cpuMs} ms CPU`,
      '',
    ];
    process.stdout.write(lines.join('\n'));
  } finally {
    await rm(cache, { recursive: true, force: true });
    await closeSession(s);
  }
}
