-- Copyright (c) 2026, the dlock developers
--
-- 66_fence_ddl_trigger.sql: the SQL edition's event trigger dlock_fence_ddl
-- (its function is in 65_fenced_tables.sql, which both editions share).
--
-- CREATE EVENT TRIGGER needs a superuser: the script run by a superuser
-- creates it; run by an ordinary admin role (the psql form, pg_tle, or the
-- trusted extension, whose dlock_sql.control says superuser = false, so that
-- its script runs as the role that creates it) it goes without, and DDL
-- that leaves a dlock_fence trigger that does not fence gets no WARNING (the
-- view, and the trigger's own refusals when it fires, remain):
-- docs/editions.md.
DO $dlock$
BEGIN
	CREATE EVENT TRIGGER dlock_fence_ddl ON ddl_command_end
		WHEN TAG IN ('CREATE TRIGGER', 'ALTER TABLE', 'CREATE TABLE')
		EXECUTE FUNCTION @extschema@.dlock_fence_ddl();
	COMMENT ON EVENT TRIGGER dlock_fence_ddl IS
		'dlock: warns when DDL leaves a dlock_fence trigger that does not fence its table (see the view dlock_fenced_tables)';
EXCEPTION WHEN insufficient_privilege THEN
	RAISE NOTICE 'event trigger dlock_fence_ddl was not created: only a superuser can create event triggers'
		USING DETAIL = 'DDL that leaves a dlock_fence trigger that does not fence gets no WARNING; the view dlock_fenced_tables still lists it.';
END
$dlock$;
