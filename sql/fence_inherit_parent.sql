-- Copyright (c) 2026, the dlock developers
--
-- An inheritance parent (review finding, issue 26): row triggers are not
-- inherited, and an UPDATE or a DELETE of the parent reaches the rows of
-- its descendants, firing only their own row triggers.  So a parent with
-- a fencing row trigger fences UPDATE and DELETE only when every
-- descendant, at any depth, fences them too: dlock_fenced_tables says
-- false otherwise and names each such descendant in not_fencing, as it
-- does for a partitioned table, and dlock_fence_ddl warns.  An INSERT
-- writes the parent alone.  Both editions (test/sql_edition/fence/run runs
-- this file against the SQL edition).
--
\set SHOW_CONTEXT never
DROP EXTENSION dlock;
CREATE EXTENSION dlock;
CREATE TABLE par (id int, token bigint);
CREATE TRIGGER par_fence BEFORE INSERT OR UPDATE OR DELETE ON par
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('inh', 'token');
CREATE TRIGGER par_fence_truncate BEFORE TRUNCATE ON par
  FOR EACH STATEMENT EXECUTE FUNCTION dlock_fence('inh');
SELECT "table", "insert", "update", "delete", "truncate", not_fencing
  FROM dlock_fenced_tables ORDER BY "table"::text;
-- A child without a trigger of its own: the warning says what the parent
-- no longer fences.
CREATE TABLE kid () INHERITS (par);
SELECT "table", "insert", "update", "delete", "truncate", not_fencing
  FROM dlock_fenced_tables ORDER BY "table"::text;
-- Why: with no token declared, a DELETE and an UPDATE of the parent
-- reach the child's rows unfenced.
INSERT INTO kid VALUES (1, NULL), (2, NULL);
UPDATE par SET id = id + 10;
DELETE FROM par WHERE id = 12;
SELECT tableoid::regclass, id FROM par ORDER BY id;
-- With a fencing trigger of its own on the child, the parent fences
-- UPDATE and DELETE again, and the same writes are refused.
CREATE TRIGGER kid_fence BEFORE INSERT OR UPDATE OR DELETE ON kid
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('inh', 'token');
SELECT "table", "insert", "update", "delete", "truncate", not_fencing
  FROM dlock_fenced_tables WHERE "table" = 'par'::regclass;
\set VERBOSITY sqlstate
UPDATE par SET id = id + 10;
DELETE FROM par;
\set VERBOSITY default
-- Deeper: a grandchild whose own fence leaves UPDATE and DELETE out, one
-- with a disabled fence, and one with none: each ancestor says so.
CREATE TABLE gk_ins () INHERITS (kid);
CREATE TRIGGER gk_ins_fence BEFORE INSERT ON gk_ins
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('inh', 'token');
CREATE TABLE gk_upd () INHERITS (kid);
CREATE TRIGGER gk_upd_fence BEFORE INSERT OR UPDATE ON gk_upd
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('inh', 'token');
CREATE TABLE gk_off () INHERITS (kid);
CREATE TRIGGER gk_off_fence BEFORE INSERT OR UPDATE OR DELETE ON gk_off
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('inh', 'token');
ALTER TABLE gk_off DISABLE TRIGGER gk_off_fence;
CREATE TABLE gk_none (id int, token bigint);
ALTER TABLE gk_none INHERIT kid;
SELECT "table", "insert", "update", "delete", "truncate", not_fencing
  FROM dlock_fenced_tables WHERE "table" IN ('par'::regclass, 'kid'::regclass) ORDER BY "table"::text;
DROP TABLE gk_ins, gk_upd, gk_off, gk_none;
SELECT "table", "insert", "update", "delete", "truncate", not_fencing
  FROM dlock_fenced_tables ORDER BY "table"::text;
DROP TABLE par CASCADE;
