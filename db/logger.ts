// One pino logger for every process. Secrets are redacted by path so a careless log call
// cannot leak an API key, a signature or a vendor credential.
import { pino } from 'pino';

export const logger = pino({
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
});

export type Logger = typeof logger;
