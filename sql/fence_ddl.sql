-- Copyright (c) 2026, the dlock developers
--
-- The event trigger dlock_fence_ddl (issue 24 item 7) is PL/pgSQL: DDL in
-- a session that never called dlock gets its warnings without loading the
-- dlock library, so a session still running an older library, a library
-- replaced on disk or one that is gone does not break CREATE TABLE, ALTER
-- TABLE or CREATE TRIGGER.  pg_regress runs each file in a new session;
-- this one calls no dlock function and needs the extension that
-- fence_config leaves installed.
--
CREATE TABLE ddl_only (id int, token bigint);
CREATE TRIGGER ddl_only_fence BEFORE INSERT ON ddl_only
  FOR EACH ROW WHEN (NEW.id > 0) EXECUTE FUNCTION dlock_fence('cfg', 'token');
-- An ALTER TABLE in a subtransaction that disables or enables it warns;
-- one that changes no trigger (ADD COLUMN) does not.
BEGIN;
SAVEPOINT s;
ALTER TABLE ddl_only DISABLE TRIGGER ddl_only_fence;
ALTER TABLE ddl_only ENABLE REPLICA TRIGGER ddl_only_fence;
RELEASE s;
COMMIT;
ALTER TABLE ddl_only ADD COLUMN note text;
CREATE TABLE ddl_only_child () INHERITS (ddl_only);
-- A table that becomes the inheritance child of a fenced one in a
-- subtransaction is warned about; a later ALTER TABLE of it is not.
CREATE TABLE ddl_parent (id int, token bigint);
CREATE TRIGGER ddl_parent_fence BEFORE INSERT OR UPDATE OR DELETE ON ddl_parent
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 'token');
CREATE TABLE ddl_adopted (id int, token bigint);
BEGIN;
SAVEPOINT s;
ALTER TABLE ddl_adopted INHERIT ddl_parent;
RELEASE s;
COMMIT;
ALTER TABLE ddl_adopted ADD COLUMN note text;
SELECT count(*) AS dlock_library_loaded
  FROM pg_catalog.regexp_split_to_table(
         pg_catalog.pg_read_file('/proc/' || pg_catalog.pg_backend_pid() || '/maps'), E'\n') AS l
 WHERE l LIKE '%/dlock.so';
DROP TABLE ddl_only, ddl_parent CASCADE;
