-- Copyright (c) 2026, the dlock developers
--
-- The fence's configuration (issue 24 items 7 and 11): a dlock_fence
-- trigger that does not fire for every write (a column list, a WHEN
-- condition, ENABLE REPLICA, disabled, an inheritance child without a
-- trigger of its own, a partition whose clone does not fence, which its
-- partitioned ancestors then do not either, a token column that cannot
-- hold every bigint) is reported by dlock_fenced_tables with the reason,
-- refused when it fires (a column list, WHEN, the token column), and
-- warned about by the event trigger dlock_fence_ddl (also
-- sql/fence_ddl.sql); bigint and domains over bigint pass.
--
\set SHOW_CONTEXT never
DROP EXTENSION dlock;
CREATE EXTENSION dlock;
SELECT dlock_acquire('cfg', '1 min') AS t1 \gset
SELECT dlock_release('cfg', :t1);
SELECT dlock_acquire('cfg', '1 min') AS t2 \gset

-- One table fenced as documented.
CREATE TABLE good (id int, token bigint);
CREATE TRIGGER good_fence BEFORE INSERT OR UPDATE OR DELETE ON good
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 'token');
CREATE TRIGGER good_fence_truncate BEFORE TRUNCATE ON good
  FOR EACH STATEMENT EXECUTE FUNCTION dlock_fence('cfg');
INSERT INTO good VALUES (1, :t2);

-- A column list: the event trigger warns; a write that fires the trigger is
-- refused with 39P01 (one that does not fire it is not fenced at all).
CREATE TABLE col_list (id int, token bigint);
INSERT INTO col_list VALUES (1, :t2);
CREATE TRIGGER col_list_fence BEFORE INSERT OR UPDATE OF token OR DELETE ON col_list
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 'token');
INSERT INTO col_list VALUES (2, :t2);
\echo :LAST_ERROR_SQLSTATE
UPDATE col_list SET token = :t2;
\echo :LAST_ERROR_SQLSTATE
-- (a stale UPDATE that does not set the token does not fire it)
UPDATE col_list SET id = 3;
SELECT id FROM col_list;
-- Re-enabling it warns again.
ALTER TABLE col_list DISABLE TRIGGER col_list_fence;
ALTER TABLE col_list ENABLE TRIGGER col_list_fence;

-- A WHEN condition: the same.
CREATE TABLE cond (id int, token bigint);
CREATE TRIGGER cond_fence BEFORE INSERT OR UPDATE ON cond
  FOR EACH ROW WHEN (NEW.id > 0) EXECUTE FUNCTION dlock_fence('cfg', 'token');
INSERT INTO cond VALUES (1, :t2);
\echo :LAST_ERROR_SQLSTATE
-- (a stale write for which the condition is false is not fenced: the
-- view says so)
INSERT INTO cond VALUES (0, :t1);
SELECT count(*) AS unfenced_rows FROM cond;

-- ENABLE REPLICA: never fires in an ordinary session.  ENABLE ALWAYS fences,
-- but fires in apply workers too: a warning each.
CREATE TABLE replica (id int, token bigint);
CREATE TRIGGER replica_fence BEFORE INSERT OR UPDATE OR DELETE ON replica
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 'token');
ALTER TABLE replica ENABLE REPLICA TRIGGER replica_fence;
INSERT INTO replica VALUES (1, :t1);
SELECT count(*) AS stale_rows FROM replica;
CREATE TABLE always (id int, token bigint);
CREATE TRIGGER always_fence BEFORE INSERT OR UPDATE OR DELETE ON always
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 'token');
ALTER TABLE always ENABLE ALWAYS TRIGGER always_fence;
\set VERBOSITY sqlstate
INSERT INTO always VALUES (1, :t1);
\set VERBOSITY default

-- Not BEFORE ... FOR EACH ROW: refused when it fires (39P01), warned of.
CREATE TABLE after (id int, token bigint);
CREATE TRIGGER after_fence AFTER INSERT ON after
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 'token');
CREATE TRIGGER after_fence_stmt BEFORE INSERT ON after
  FOR EACH STATEMENT EXECUTE FUNCTION dlock_fence('cfg', 'token');

-- Disabled (no warning: a bulk load disables triggers on purpose).
CREATE TABLE disabled (id int, token bigint);
CREATE TRIGGER disabled_fence BEFORE INSERT OR UPDATE OR DELETE ON disabled
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 'token');
ALTER TABLE disabled DISABLE TRIGGER disabled_fence;
-- Re-enabled with ENABLE TRIGGER: it fences again.
CREATE TABLE reenabled (id int, token bigint);
CREATE TRIGGER reenabled_fence BEFORE INSERT OR UPDATE OR DELETE ON reenabled
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 'token');
ALTER TABLE reenabled DISABLE TRIGGER ALL;
ALTER TABLE reenabled ENABLE TRIGGER ALL;

-- Inheritance: a child's rows fire only the child's own row triggers.
CREATE TABLE child (extra int) INHERITS (good);
INSERT INTO child VALUES (2, :t1, 0);
SELECT count(*) AS stale_rows FROM child;
CREATE TABLE grandchild () INHERITS (child);
CREATE TABLE adopted (id int, token bigint);
ALTER TABLE adopted INHERIT good;
-- A child with a trigger of its own is fenced.
CREATE TABLE fenced_child () INHERITS (good);
CREATE TRIGGER fenced_child_fence BEFORE INSERT OR UPDATE OR DELETE ON fenced_child
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 'token');
-- Creating the fence on a parent that has children warns about them.
CREATE TABLE parent2 (id int, token bigint);
CREATE TABLE child2 () INHERITS (parent2);
CREATE TRIGGER parent2_fence BEFORE INSERT OR UPDATE OR DELETE ON parent2
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 'token');
-- So does re-enabling it (pg_restore --disable-triggers ends so).
ALTER TABLE parent2 DISABLE TRIGGER ALL;
ALTER TABLE parent2 ENABLE TRIGGER ALL;

-- Partitions get clones of the parent's triggers: fenced, no warning.
CREATE TABLE parted (id int, token bigint) PARTITION BY RANGE (id);
CREATE TRIGGER parted_fence BEFORE INSERT OR UPDATE OR DELETE ON parted
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 'token');
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (10);
-- A partition whose clone of the fence is disabled, at any depth: its
-- partitioned ancestors do not fence either, and name it (DISABLE TRIGGER,
-- by name or USER, warns).  A stale INSERT through the parent passes.
CREATE TABLE ep (id int, k int, token bigint) PARTITION BY LIST (k);
CREATE TRIGGER f BEFORE INSERT OR UPDATE OR DELETE ON ep
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 'token');
CREATE TABLE ep1 PARTITION OF ep FOR VALUES IN (1);
CREATE TABLE ep2 PARTITION OF ep FOR VALUES IN (2, 3) PARTITION BY LIST (k);
CREATE TABLE ep3 PARTITION OF ep2 FOR VALUES IN (3);
CREATE TABLE ep4 PARTITION OF ep FOR VALUES IN (4);
ALTER TABLE ep1 DISABLE TRIGGER f;
ALTER TABLE ep3 DISABLE TRIGGER USER;
INSERT INTO ep VALUES (1, 1, :t1);
\set VERBOSITY sqlstate
INSERT INTO ep VALUES (4, 4, :t1);
\set VERBOSITY default
-- A token column that cannot hold every token does not fence; nor does a
-- partition attached to such a table (ATTACH PARTITION warns).
CREATE TABLE small (id int, token int) PARTITION BY RANGE (id);
CREATE TRIGGER small_fence BEFORE INSERT OR UPDATE OR DELETE ON small
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 'token');
CREATE TABLE small_1 (id int, token int);
ALTER TABLE small ATTACH PARTITION small_1 FOR VALUES FROM (0) TO (10);

SELECT * FROM dlock_fenced_tables ORDER BY "table"::text;

-- Token columns must hold every bigint: 42804 with a hint.
CREATE DOMAIN small_token AS int;
CREATE DOMAIN token_t AS bigint;
CREATE DOMAIN positive_token AS token_t CHECK (VALUE > 0);
CREATE DOMAIN tiny_token AS bigint CHECK (VALUE < 1000);
CREATE TABLE types (id int, t_int int, t_int2 int2, t_num numeric(10),
                    t_num_wide numeric, t_dom_int small_token,
                    t_bigint bigint, t_dom token_t, t_dom2 positive_token,
                    t_tiny tiny_token);
CREATE TRIGGER types_fence BEFORE INSERT ON types
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 't_int');
INSERT INTO types (id) VALUES (1);
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER types_fence ON types;
CREATE TRIGGER types_fence BEFORE INSERT ON types
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 't_int2');
INSERT INTO types (id) VALUES (1);
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER types_fence ON types;
CREATE TRIGGER types_fence BEFORE INSERT ON types
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 't_num');
INSERT INTO types (id) VALUES (1);
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER types_fence ON types;
CREATE TRIGGER types_fence BEFORE INSERT ON types
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 't_num_wide');
INSERT INTO types (id) VALUES (1);
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER types_fence ON types;
CREATE TRIGGER types_fence BEFORE INSERT ON types
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 't_dom_int');
INSERT INTO types (id) VALUES (1);
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER types_fence ON types;
-- bigint, a domain over bigint and a domain over that pass: the holder's
-- token (declared, filled in) is written, a stale one is refused.
BEGIN;
SELECT dlock_assert('cfg', :t2);
CREATE TRIGGER types_fence BEFORE INSERT ON types
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 't_bigint');
INSERT INTO types (id) VALUES (1);
DROP TRIGGER types_fence ON types;
CREATE TRIGGER types_fence BEFORE INSERT ON types
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 't_dom');
INSERT INTO types (id) VALUES (2);
DROP TRIGGER types_fence ON types;
CREATE TRIGGER types_fence BEFORE INSERT ON types
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 't_dom2');
INSERT INTO types (id) VALUES (3);
COMMIT;
SELECT id, t_bigint = :t2 AS bigint_filled, t_dom = :t2 AS domain_filled,
       t_dom2 = :t2 AS domain2_filled
  FROM types ORDER BY id;
\set VERBOSITY sqlstate
INSERT INTO types (id, t_dom2) VALUES (4, :t1);
\set VERBOSITY default
DROP TRIGGER types_fence ON types;
-- A token filled in is checked against the domain's constraints.
BEGIN;
SELECT dlock_assert('cfg', :t2);
CREATE TRIGGER types_fence BEFORE INSERT ON types
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 't_tiny');
INSERT INTO types (id) VALUES (5);
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE

DROP TABLE good, col_list, cond, replica, always, after, disabled, reenabled,
  child, grandchild, adopted, fenced_child, parent2, child2, parted, types,
  ep, small;
DROP DOMAIN small_token, positive_token, token_t, tiny_token;
SELECT * FROM dlock_fenced_tables;
SELECT dlock_release('cfg', :t2) AS released;

-- The update from 1.1 names the fenced tables whose token column the fence
-- refuses (not those of bigint or a domain over bigint, nor TRUNCATE
-- triggers, which have no token column), and its triggers with a column
-- list or a WHEN condition.
DROP EXTENSION dlock;
CREATE EXTENSION dlock VERSION '1.1';
CREATE DOMAIN small_token AS int;
CREATE DOMAIN token_t AS bigint;
CREATE DOMAIN token_t2 AS token_t;
CREATE TABLE old_types (lock text, t_int int, t_int2 int2, t_num numeric(10),
                        t_dom_int small_token, t_bigint bigint, t_dom token_t,
                        t_dom2 token_t2, "Odd Name" int);
CREATE TRIGGER f_int BEFORE INSERT ON old_types
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 't_int');
CREATE TRIGGER f_int2 BEFORE INSERT ON old_types
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('lock', 't_int2', 'column');
CREATE TRIGGER f_num BEFORE INSERT ON old_types
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 't_num');
CREATE TRIGGER f_dom_int BEFORE INSERT ON old_types
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 't_dom_int');
CREATE TRIGGER f_odd BEFORE INSERT ON old_types
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 'Odd Name');
CREATE TRIGGER f_bigint BEFORE INSERT ON old_types
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 't_bigint');
CREATE TRIGGER f_dom BEFORE INSERT ON old_types
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 't_dom');
CREATE TRIGGER f_dom2 BEFORE INSERT ON old_types
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 't_dom2');
CREATE TRIGGER f_truncate BEFORE TRUNCATE ON old_types
  FOR EACH STATEMENT EXECUTE FUNCTION dlock_fence('cfg', 't_int');
-- And the triggers it refuses when they fire.
CREATE TRIGGER f_cols BEFORE UPDATE OF t_bigint ON old_types
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('cfg', 't_bigint');
CREATE TRIGGER f_when BEFORE INSERT ON old_types
  FOR EACH ROW WHEN (NEW.t_bigint > 0) EXECUTE FUNCTION dlock_fence('cfg', 't_bigint');
ALTER EXTENSION dlock UPDATE;
DROP TABLE old_types;
DROP DOMAIN small_token, token_t2, token_t;
DROP EXTENSION dlock;
CREATE EXTENSION dlock;
