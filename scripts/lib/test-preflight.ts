// What `npm test` needs from the machine beyond Node and npm, checked before the run starts. A
// test whose program is missing fails (it never skips), so a first run on a stock machine would
// end red after minutes; instead the runner lists what is missing for the files it was asked to
// run, and how to install each, and stops before starting Postgres.
import { existsSync, readdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export interface Requirement {
  what: string;
  /** The test files that need it (paths from the repository root). */
  files: string[];
  /** The programs it looks for (names on PATH, or absolute paths): any one of them, or all. */
  programs: string[];
  need: 'any' | 'all';
  /** A variable naming the program instead. */
  override?: string;
  install: string;
}

export const REQUIREMENTS: Requirement[] = [
  {
    what: 'Chromium',
    files: ['test/checkout/checkout.test.ts'],
    override: 'CHROMIUM_PATH',
    programs: ['/usr/bin/chromium', '/usr/bin/chromium-browser'],
    need: 'any',
    install: 'apt-get install chromium (Debian; .ci/run does), or set CHROMIUM_PATH to a Chromium or Chrome binary',
  },
  {
    what: 'PgBouncer',
    files: ['test/db/pgbouncer.test.ts', 'test/db/replica.test.ts'],
    override: 'PGBOUNCER_PATH',
    programs: ['pgbouncer', '/usr/sbin/pgbouncer'],
    need: 'any',
    install: 'apt-get install pgbouncer (Debian 12 has 1.18), or set PGBOUNCER_PATH',
  },
  {
    what: 'PHP and Go (the webhook receiver examples in docs/examples/ run on them)',
    files: ['test/orders/webhook-receiver-example.test.ts'],
    programs: ['php', 'go'],
    need: 'all',
    install: 'apt-get install php-cli golang-go (Debian; .ci/run does)',
  },
  {
    what: 'curl, openssl, sha256sum and base64 (the README walkthrough runs them)',
    files: ['test/scripts/readme.test.ts'],
    programs: ['curl', 'openssl', 'sha256sum', 'base64', 'bash'],
    need: 'all',
    install: 'apt-get install curl openssl coreutils bash',
  },
];

export interface Machine {
  env: Record<string, string | undefined>;
  exists(path: string): boolean;
}

const realMachine: Machine = { env: process.env, exists: existsSync };

/** A program by absolute path, or by name on PATH. */
function found(program: string, machine: Machine): boolean {
  if (program.startsWith('/')) return machine.exists(program);
  return (machine.env.PATH ?? '').split(delimiter).some((dir) => dir && machine.exists(join(dir, program)));
}

/** The requirements the chosen files have and the machine lacks. */
export function missingFor(files: string[], machine: Machine = realMachine): Requirement[] {
  return REQUIREMENTS.filter((r) => {
    if (!r.files.some((f) => files.includes(f))) return false;
    const override = r.override ? machine.env[r.override] : undefined;
    if (override) return !found(override, machine);
    return r.need === 'any' ? !r.programs.some((p) => found(p, machine)) : !r.programs.every((p) => found(p, machine));
  });
}

/** The message printed when something is missing. */
export function preflightMessage(missing: Requirement[], files: string[]): string {
  const lines = ['npm test: this machine lacks what some test files need (they would fail, not skip):'];
  for (const r of missing) {
    lines.push(`  - ${r.what}, for ${r.files.filter((f) => files.includes(f)).join(', ')}`, `      install: ${r.install}`);
  }
  lines.push(
    'Install it and run again, run everything else with `npm test -- --available`,',
    'or run other files: npm test -- test/path/a.test.ts …',
  );
  return lines.join('\n');
}

/** `npm test -- --available`: run every chosen file whose needs the machine has, and say which are left out. */
export const AVAILABLE_FLAG = '--available';

export interface Plan {
  /** The arguments tap gets: the flag removed, and with --available the files that can run named. */
  tapArgs: string[];
  /** What is missing for the chosen files: stops the run unless --available. */
  missing: Requirement[];
  /** With --available: the files left out, with what each lacks. */
  leftOut: { file: string; what: string }[];
}

export function plan(args: string[], root: string, machine: Machine = realMachine): Plan {
  const available = args.includes(AVAILABLE_FLAG);
  const rest = args.filter((a) => a !== AVAILABLE_FLAG);
  const files = selectedFiles(rest, root);
  const missing = missingFor(files, machine);
  if (!available || !missing.length) return { tapArgs: rest, missing: available ? [] : missing, leftOut: [] };
  const leftOut = missing.flatMap((r) => r.files.filter((f) => files.includes(f)).map((file) => ({ file, what: r.what })));
  const runnable = files.filter((f) => !leftOut.some((l) => l.file === f));
  return { tapArgs: [...rest.filter((a) => !a.endsWith('.test.ts')), ...runnable], missing: [], leftOut };
}

/** What --available says before the run about the files it leaves out. */
export function leftOutMessage(leftOut: Plan['leftOut']): string {
  return [
    `npm test --available: ${leftOut.length} file(s) left out, this machine lacks what they need (see npm test without --available):`,
    ...leftOut.map((l) => `  - ${l.file}: ${l.what}`),
  ].join('\n');
}

/** The test files a tap run would take: those named, else every test/**\/*.test.ts. */
export function selectedFiles(args: string[], root: string): string[] {
  const named = args.filter((a) => a.endsWith('.test.ts')).map((a) => a.replace(/^\.\//, ''));
  if (named.length) return named;
  const all: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.test.ts')) all.push(path);
    }
  };
  walk('test');
  return all.sort();
}
