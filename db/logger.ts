// One pino logger for every process. Secrets are redacted by path so a careless log call
// cannot leak an API key, a signature or a vendor credential. Logs go to stdout (the process
// supervisor collects them), or to stderr with KASIR_LOG_TO=stderr: a CLI whose stdout is its
// answer (scripts/ops/logs-to-stderr.ts).
import { pino, type LoggerOptions } from 'pino';

const options: LoggerOptions = {
  level: process.env.LOG_LEVEL ?? 'info',
  base: { proc: process.env.KASIR_PROCESS ?? undefined },
  redact: {
    paths: [
      'req.headers["x-api-key"]',
      'req.headers["x-signature"]',
      'req.headers.authorization',
      '*.api_key',
      '*.apiKey',
      '*.secret',
      '*.webhook_secret',
      '*.client_secret',
      '*.credentials',
      '*.signature',
    ],
    censor: '[redacted]',
  },
};

export const logger = process.env.KASIR_LOG_TO === 'stderr' ? pino(options, pino.destination(2)) : pino(options);

export type Logger = typeof logger;
