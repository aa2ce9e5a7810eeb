// A SIGKILLed parent leaves its postmaster running, and the next start would then fail on
// postmaster.pid. Before starting a cluster, stop a postmaster that still owns the directory.
import { readFile } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';

/** Whether a process with this pid exists (signal 0 tests without sending anything). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function stopOrphanPostmaster(dataDir: string): Promise<void> {
  const pidText = await readFile(`${dataDir}/postmaster.pid`, 'utf8').catch(() => null);
  if (!pidText) return;
  const pid = Number(pidText.split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return;
  const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  if (!cmdline.includes('postgres')) return;
  process.kill(pid, 'SIGINT'); // fast shutdown: roll back open transactions, then exit
  const deadline = Date.now() + 15_000;
  while (alive(pid)) {
    if (Date.now() > deadline) {
      process.kill(pid, 'SIGKILL');
      break;
    }
    await delay(50);
  }
}
