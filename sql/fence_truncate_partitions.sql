-- Copyright (c) 2026, the dlock developers
--
-- TRUNCATE of a partition or of an inheritance child (issue 26, review
-- finding 9): it fires only its own truncate triggers, never those of its
-- ancestors (tablecmds.c, ExecuteTruncateGuts), so a BEFORE TRUNCATE fence
-- on the parent does not fence it.  dlock_fenced_tables names each such
-- table without a fencing truncate trigger of its own, a partitioned table
-- fences TRUNCATE only when every partition under it does, and the event
-- trigger dlock_fence_ddl warns about DDL that leaves one.  Both editions
-- (test/sql_edition/fence/run runs this file against the SQL edition).
--
\set SHOW_CONTEXT never
DROP EXTENSION dlock;
CREATE EXTENSION dlock;
SELECT dlock_acquire('trunc', '1 min') AS t \gset

-- A partitioned table, partitions at two depths, fenced on the parent.
CREATE TABLE pt (id int, token bigint) PARTITION BY RANGE (id);
CREATE TABLE pt_1 PARTITION OF pt FOR VALUES FROM (0) TO (10);
CREATE TRIGGER pt_fence BEFORE INSERT OR UPDATE OR DELETE ON pt
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('trunc', 'token');
-- The truncate fence warns about the partition that has none of its own,
-- and so does each partition made or attached later, at any depth.
CREATE TRIGGER pt_fence_truncate BEFORE TRUNCATE ON pt
  FOR EACH STATEMENT EXECUTE FUNCTION dlock_fence('trunc');
CREATE TABLE pt_2 PARTITION OF pt FOR VALUES FROM (10) TO (20) PARTITION BY RANGE (id);
CREATE TABLE pt_21 PARTITION OF pt_2 FOR VALUES FROM (10) TO (20);
CREATE TABLE pt_3 (id int, token bigint);
ALTER TABLE pt ATTACH PARTITION pt_3 FOR VALUES FROM (20) TO (30);
-- Inheritance children: the same.
CREATE TABLE ih (id int, token bigint);
CREATE TRIGGER ih_fence_truncate BEFORE TRUNCATE ON ih
  FOR EACH STATEMENT EXECUTE FUNCTION dlock_fence('trunc');
CREATE TABLE ih_c () INHERITS (ih);
CREATE TABLE ih_d (id int, token bigint);
ALTER TABLE ih_d INHERIT ih;
-- Other DDL on them later does not warn again.
ALTER TABLE ih_d ADD COLUMN note text;
ALTER TABLE pt_1 ALTER COLUMN token SET NOT NULL;

SELECT "table", "truncate", not_fencing FROM dlock_fenced_tables ORDER BY "table"::text;

-- Without a declared token a TRUNCATE of the parent is refused, and one of
-- a partition or a child gets through, as the view says.
INSERT INTO pt VALUES (1, :t), (11, :t), (21, :t);
INSERT INTO ih VALUES (1, :t);
INSERT INTO ih_c VALUES (2, :t);
\set VERBOSITY sqlstate
TRUNCATE pt;
TRUNCATE ih;
\set VERBOSITY default
TRUNCATE pt_1;
TRUNCATE ih_c;
SELECT (SELECT count(*) FROM pt) AS pt, (SELECT count(*) FROM ih) AS ih;

-- A truncate trigger on each of them: every TRUNCATE is fenced, the view
-- says so, and no DDL warns.
CREATE TRIGGER fence_truncate BEFORE TRUNCATE ON pt_1
  FOR EACH STATEMENT EXECUTE FUNCTION dlock_fence('trunc');
CREATE TRIGGER fence_truncate BEFORE TRUNCATE ON pt_2
  FOR EACH STATEMENT EXECUTE FUNCTION dlock_fence('trunc');
CREATE TRIGGER fence_truncate BEFORE TRUNCATE ON pt_3
  FOR EACH STATEMENT EXECUTE FUNCTION dlock_fence('trunc');
SELECT "table", "truncate", not_fencing FROM dlock_fenced_tables
 WHERE "table"::text LIKE 'pt%' ORDER BY "table"::text;
CREATE TRIGGER fence_truncate BEFORE TRUNCATE ON pt_21
  FOR EACH STATEMENT EXECUTE FUNCTION dlock_fence('trunc');
CREATE TRIGGER fence_truncate BEFORE TRUNCATE ON ih_c
  FOR EACH STATEMENT EXECUTE FUNCTION dlock_fence('trunc');
CREATE TRIGGER fence_truncate BEFORE TRUNCATE ON ih_d
  FOR EACH STATEMENT EXECUTE FUNCTION dlock_fence('trunc');
SELECT "table", "truncate", not_fencing FROM dlock_fenced_tables ORDER BY "table"::text;
\set VERBOSITY sqlstate
TRUNCATE pt_21;
TRUNCATE pt_2;
TRUNCATE ih_d;
\set VERBOSITY default
SELECT (SELECT count(*) FROM pt) AS pt, (SELECT count(*) FROM ih) AS ih;
BEGIN;
SELECT dlock_assert('trunc', :t);
TRUNCATE pt_21;
TRUNCATE ih_c;
TRUNCATE pt;
COMMIT;
SELECT (SELECT count(*) FROM pt) AS pt, (SELECT count(*) FROM ih) AS ih;

DROP TABLE pt, ih CASCADE;
SELECT dlock_release('trunc', :t);
