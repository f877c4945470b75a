-- The C edition's fence tests pin the token epoch at floor 0 so that tokens
-- count from 1; the SQL edition's epoch row for the same (its history as
-- dlock_sql_history() reads it: the test runs as a superuser).
INSERT INTO dlock_epoch
SELECT 0, h.system_identifier, h.timeline, h.database_oid, h.counter_relfilenode, pg_catalog.clock_timestamp(), 'test'
  FROM dlock_sql_history() AS h;
