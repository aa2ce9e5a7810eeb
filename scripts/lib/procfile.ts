// The Procfile's lines, as npm start and the crash soak run them: every line is one Kasir
// process (`name: command args…`), spawned from the repository root.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { ROOT } from './local.ts';

export interface ProcfileLine {
  name: string;
  argv: string[];
}

export const SIMULATOR_ENTRY = 'gateways/simulator/server.ts';

export async function readProcfile(): Promise<ProcfileLine[]> {
  const text = await readFile(`${ROOT}Procfile`, 'utf8');
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const colon = line.indexOf(':');
      return { name: line.slice(0, colon).trim(), argv: line.slice(colon + 1).trim().split(/\s+/) };
    })
    // A line whose entry file is not in this checkout yet is skipped, not fatal.
    .filter((line) => existsSync(`${ROOT}${line.argv[1]}`));
}

/** Whether a line runs the simulator gateway (a vendor stand-in, not part of Kasir itself). */
export function isSimulator(line: ProcfileLine): boolean {
  return line.argv[1] === SIMULATOR_ENTRY;
}

/** Whether a line serves GET /metrics when given METRICS_PORT (the simulator serves none). */
export function servesMetrics(line: ProcfileLine): boolean {
  return line.argv[1] === 'api/server.ts' || line.argv[1] === 'workers/run.ts';
}

/** The simulator stands for a vendor's servers: it gets none of Kasir's secrets or its database. */
export function simulatorEnv(env: Record<string, string | undefined>): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !name.startsWith('KASIR_') && !name.startsWith('DATABASE_')));
}
