// The ops CLI's stdout is its answer (one JSON object with --json, for jq and scripts), so its
// logs go to stderr. Imported first by scripts/ops.ts: it must run before anything imports
// db/logger.ts, which reads KASIR_LOG_TO once, when the logger is made.
process.env.KASIR_LOG_TO = 'stderr';
