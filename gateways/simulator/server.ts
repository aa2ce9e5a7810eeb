// Process entry of the simulator gateway: `node gateways/simulator/server.ts`.
// stdout carries exactly one line, `simulator listening on <url>`, which scripts and tests wait
// for; logs go to stderr so they never interleave with it.
import { pino } from 'pino';
import { startSimulator } from './app.ts';
import { DEV_SECRET, loadSimulatorConfig, type SimulatorConfig } from './config.ts';

let config: SimulatorConfig;
try {
  config = loadSimulatorConfig(process.env);
} catch (error) {
  process.stderr.write(`${(error as Error).message}\n`);
  process.exit(1);
}

const logger = pino({ level: process.env.LOG_LEVEL ?? 'info', base: { proc: 'simulator', code: config.code } }, pino.destination(2));
if (config.secret === DEV_SECRET) logger.warn('SIMULATOR_SECRET is the dev-only default; set it wherever the simulator is shared');

let simulator: Awaited<ReturnType<typeof startSimulator>>;
try {
  simulator = await startSimulator({ ...config, logger });
} catch (error) {
  // An unreadable state file or a port in use: say which, without a stack.
  process.stderr.write(`${(error as Error).message}\n`);
  process.exit(1);
}
process.stdout.write(`simulator listening on ${simulator.url}\n`);

async function stop(signal: string) {
  logger.info({ signal }, 'stopping');
  // A leftover handle must not turn a requested stop into a hang; unref lets a clean exit win,
  // and the forced one exits 1 so a shutdown bug does not pass unnoticed.
  setTimeout(() => {
    logger.error('still running 3 s after stop; forcing exit');
    process.exit(1);
  }, 3000).unref();
  await simulator.stop();
}
process.once('SIGTERM', () => void stop('SIGTERM'));
process.once('SIGINT', () => void stop('SIGINT'));
