-- The database role Kasir's processes serve with (README, "Database roles"). Run as the owner
-- role (the one `npm run migrate` uses) after the first migrate, in the Kasir database:
--   psql "$MIGRATION_OWNER_URL" -f docs/app-role.sql
-- It reads and writes rows; it cannot create, alter or drop anything, so a compromised API
-- process cannot change the schema, and migrations stay the owner's. Tables and sequences a
-- later migration adds are covered by the default privileges below (for objects the owner
-- creates). Create the login role itself once, as a superuser or a role with CREATEROLE:
--   create role kasir_app login password '...';
grant usage on schema public, pgboss to kasir_app;
grant select, insert, update, delete on all tables in schema public, pgboss to kasir_app;
grant usage, select on all sequences in schema public, pgboss to kasir_app;
alter default privileges in schema public, pgboss grant select, insert, update, delete on tables to kasir_app;
alter default privileges in schema public, pgboss grant usage, select on sequences to kasir_app;
-- The migration record is the owner's alone.
revoke insert, update, delete on kasir_migrations from kasir_app;
-- ANALYZE, for the scheduler's statistics sweep (db/table-statistics.ts): PostgreSQL 17 and
-- later grant it as MAINTAIN. Before 17 only the owner may analyze, the sweep's ANALYZE is
-- skipped with a warning, and autovacuum alone refreshes statistics (within about a minute).
do $$
begin
  if current_setting('server_version_num')::int >= 170000 then
    execute 'grant maintain on all tables in schema public, pgboss to kasir_app';
    execute 'alter default privileges in schema public, pgboss grant maintain on tables to kasir_app';
  end if;
end
$$;
