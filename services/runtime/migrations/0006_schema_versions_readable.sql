-- Since this version every process checks at start, read-only, that no schema names a migration it does not have
-- (docs/runtime.md, "A newer schema"); the migrations grant the application role SELECT on each schema_migrations for
-- it (grantAppRole). The runtime set is migrated first. A release from before the check re-granted the runtime schema
-- as it knew it, which revokes that SELECT, and only then refused at the next schema: an older release's migrations
-- Job run against this database (a downgrade tried and refused) left every pod of this version unable to pass its
-- start-up check. With this migration in the runtime set, such a release finds an unknown runtime migration and
-- refuses there, before it grants or revokes anything.
COMMENT ON TABLE schema_migrations IS 'Migrations applied to the runtime schema. The application role reads it at start to refuse a schema a newer Lore migrated.';
