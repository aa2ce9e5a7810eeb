// CPU time per process, from /proc (Linux), for benches that run several processes on a machine
// with few cores: sampled before and after a measured phase, the difference says which process
// used the cores. Figures are in "% of one core" over the phase (200% = both cores of 2).
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat times (`getconf CLK_TCK`: 100 on Linux x86-64). */
const TICKS = 100;

interface Stat {
  ppid: number;
  /** utime + stime of the process itself. */
  own: number;
  /** stime alone: in the kernel (for these processes, mostly loopback TCP reads and writes). */
  system: number;
  /** cutime + cstime: children it has waited for (a postmaster reaps its exited backends). */
  reaped: number;
  /** cstime alone. */
  reapedSystem: number;
}

function readStat(pid: number): Stat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // Field 2 (comm) may hold spaces and parentheses: split after its closing parenthesis.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): ppid is field 4, utime..cstime are fields 14..17.
  return {
    ppid: Number(fields[1]),
    own: Number(fields[11]) + Number(fields[12]),
    system: Number(fields[12]),
    reaped: Number(fields[13]) + Number(fields[14]),
    reapedSystem: Number(fields[14]),
  };
}

/** The parent of a process (a backend's parent is its postmaster), or null when it is gone. */
export function parentPid(pid: number): number | null {
  return readStat(pid)?.ppid ?? null;
}

export interface Ticks {
  total: number;
  system: number;
}

/** CPU ticks of one process so far, or null when it is gone (or /proc is not there). */
export function processTicks(pid: number): Ticks | null {
  const stat = readStat(pid);
  return stat ? { total: stat.own, system: stat.system } : null;
}

/**
 * CPU ticks of a process and all its children, including exited children it has reaped: for a
 * postmaster, every backend's time, whether the backend is still connected or not.
 */
export function treeTicks(rootPid: number): Ticks | null {
  const root = readStat(rootPid);
  if (!root) return null;
  const ticks = { total: root.own + root.reaped, system: root.system + root.reapedSystem };
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(Number(entry));
    if (stat?.ppid !== rootPid) continue;
    ticks.total += stat.own;
    ticks.system += stat.system;
  }
  return ticks;
}

/** Busy and total ticks of the whole machine (all cores), from /proc/stat. */
export function machineTicks(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0];
  const values = line.trim().split(/\s+/).slice(1).map(Number);
  const total = values.slice(0, 8).reduce((a, b) => a + b, 0); // user..steal; guest is inside user
  const idle = values[3] + values[4]; // idle + iowait
  return { busy: total - idle, total };
}

export type Probe = () => Ticks | null;

/**
 * Samples every probe now; `stop()` samples again and returns each probe's CPU use over the
 * interval in % of one core, and the machine's busy share in % of all its cores.
 */
export function startCpuSample(probes: Record<string, Probe>) {
  const started = performance.now();
  const before = Object.fromEntries(Object.entries(probes).map(([name, probe]) => [name, probe()]));
  const machineBefore = machineTicks();
  return {
    stop() {
      const seconds = (performance.now() - started) / 1000;
      const machineAfter = machineTicks();
      const percent: Record<string, number | null> = {};
      const system: Record<string, number | null> = {};
      const toPercent = (ticks: number) => Math.round((ticks / TICKS / seconds) * 100);
      for (const [name, probe] of Object.entries(probes)) {
        const a = before[name];
        const b = probe();
        percent[name] = a && b ? toPercent(b.total - a.total) : null;
        system[name] = a && b ? toPercent(b.system - a.system) : null;
      }
      const machineBusy = Math.round(((machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total)) * 100);
      return {
        seconds: Number(seconds.toFixed(1)),
        percent_of_one_core: percent,
        /** The kernel's part of percent_of_one_core (system time). */
        system_percent_of_one_core: system,
        machine_busy_percent: machineBusy,
      };
    },
  };
}

/** This process's own CPU (for the load generator running in it), in ticks like the others. */
export function selfTicks(): Ticks {
  const { user, system } = process.cpuUsage();
  return { total: (user + system) / (1_000_000 / TICKS), system: system / (1_000_000 / TICKS) };
}
