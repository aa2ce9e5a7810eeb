// npm run migrate: applies pending migrations (and pg-boss's schema and queues) to DATABASE_DIRECT_URL or
// DATABASE_URL, or to the local embedded cluster when both are unset.
import { prepareDatabase } from '../db/migrate.ts';
import { resolveDatabase } from './lib/local.ts';

const database = await resolveDatabase();
try {
  const applied = await prepareDatabase(database.url);
  process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n');
} finally {
  await database.release();
}
