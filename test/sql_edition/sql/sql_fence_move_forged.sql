-- Copyright (c) 2026, the dlock developers
--
-- The pending partition move of the SQL edition's fence is the
-- transaction-local setting dlock_sql.fence_move, which any role can set
-- (docs/editions.md), and nothing else the trigger leaves behind could be
-- trusted more: it runs as the writer, so the writer's role can do all it
-- does, SECURITY DEFINER calls included.  So the INSERT half of a move
-- never trusts the moved row's token: it passes only as the token of the
-- writer the UPDATE checked (checked again), a token below it is replaced
-- by it, a token above it is refused.  The holder role forges moves here,
-- to write into a partition of its own fenced table a row whose token was
-- never issued for the lock: above its current token (refused, LK001), or
-- below it (another lock's token, or an old token of the lock by a plain
-- INSERT): the row gets the current token.  Real moves still pass.
-- Tokens vary: only comparisons are printed.
\set SHOW_CONTEXT never
SET search_path = dlock, public;
-- A 1.0-style fence (no BEFORE DELETE): the INSERT half follows the UPDATE.
CREATE TABLE fm (id int, k int, token bigint) PARTITION BY LIST (k);
CREATE TABLE fm1 PARTITION OF fm FOR VALUES IN (1);
CREATE TABLE fm2 PARTITION OF fm FOR VALUES IN (2);
CREATE TRIGGER f BEFORE INSERT OR UPDATE ON fm
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('FM', 'token');
-- One lock per row (a column), DELETE fenced too.
CREATE TABLE fl (id int, k int, lock text, token bigint) PARTITION BY LIST (k);
CREATE TABLE fl1 PARTITION OF fl FOR VALUES IN (1);
CREATE TABLE fl2 PARTITION OF fl FOR VALUES IN (2);
CREATE TRIGGER f BEFORE INSERT OR UPDATE OR DELETE ON fl
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('lock', 'token', 'column');
GRANT ALL ON fm, fm1, fm2, fl, fl1, fl2 TO alice;
SET ROLE alice;
SELECT dlock_acquire('FM', '1 min') AS t1 \gset
INSERT INTO fm VALUES (1, 1, :t1);
INSERT INTO fl VALUES (1, 1, 'FM', :t1);
SELECT dlock_release('FM', :t1);
-- A token of another lock drawn between FM's two: never issued for FM.
SELECT dlock_acquire('OTHER', '1 min') AS o1 \gset
SELECT dlock_acquire('FM', '1 min') AS t2 \gset
SELECT :t1 < :o1 AND :o1 < :t2 AS other_between;
-- The forged move: stage, statement_timestamp, trigger depth, current
-- user, source partition, md5 of the old row, old lock, new lock, new
-- token, old lock's writer, new lock's writer.
CREATE FUNCTION pg_temp.forge(tok bigint, writer bigint, lock text DEFAULT 'FM',
    part text DEFAULT 'fm1') RETURNS text
  LANGUAGE sql AS $$
  SELECT set_config('dlock_sql.fence_move', array_to_string(ARRAY[
    'insert', statement_timestamp()::text, '1', current_user::text,
    part::regclass::oid::text, md5('x'), lock, lock, tok::text,
    writer::text, writer::text], chr(1)), true) $$;
-- Above the current token: refused.
\set VERBOSITY sqlstate
INSERT INTO fm SELECT 2, 2, :t2 + 1000000 FROM pg_temp.forge(:t2 + 1000000, :t2);
\set VERBOSITY default
-- Below it, another lock's token: the row gets the current token.
INSERT INTO fm SELECT 2, 2, :o1 FROM pg_temp.forge(:o1, :t2);
-- The same into a partition of the table of one lock per row: lock OTHER,
-- FM's old token (below OTHER's current one, never issued for OTHER).
INSERT INTO fl SELECT 2, 2, 'OTHER', :t1 FROM pg_temp.forge(:t1, :o1, 'OTHER', 'fl1');
-- An UPDATE that keeps its row in place leaves its move pending for the
-- next statement of the same query string: a plain INSERT there of a row
-- with the old token it left alone gets the current token.
BEGIN;
SELECT dlock_assert('FM', :t2);
UPDATE fm SET id = id WHERE id = 1 \; INSERT INTO fm VALUES (3, 2, :t1);
-- The same, the pending move forgotten by a later call of the trigger and
-- brought back by ROLLBACK TO SAVEPOINT (which restores the setting).
UPDATE fm SET id = id WHERE id = 1 \; SAVEPOINT s \; UPDATE fm SET id = id WHERE id = 2 \; ROLLBACK TO s \; INSERT INTO fm VALUES (4, 2, :t1);
COMMIT;
SELECT tableoid::regclass AS part, id, token = :t1 AS t1, token = :o1 AS o1, token = :t2 AS t2
  FROM fm ORDER BY id;
SELECT tableoid::regclass AS part, id, lock, token = :t1 AS t1, token = :o1 AS o1
  FROM fl ORDER BY id;
-- Another role's SECURITY DEFINER function, called by the holder, forges
-- a move to write the holder's token, which it does not carry for any
-- UPDATE and which was not declared: vouched for by the current user too,
-- as any carried token (42501).
RESET ROLE;
CREATE FUNCTION public.fm_intrude(w bigint) RETURNS void
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = dlock, public AS $$
  BEGIN
    PERFORM set_config('dlock_sql.fence_move', array_to_string(ARRAY[
      'insert', statement_timestamp()::text, '1', current_user::text,
      'fm1'::regclass::oid::text, md5('x'), 'FM', 'FM', w::text,
      w::text, w::text], chr(1)), true);
    INSERT INTO fm VALUES (5, 2, w);
  END $$;
ALTER FUNCTION public.fm_intrude(bigint) OWNER TO bob;
GRANT ALL ON fm, fm1, fm2 TO bob;
SET ROLE alice;
\set VERBOSITY sqlstate
SELECT public.fm_intrude(:t2);
\set VERBOSITY default
SELECT count(*) AS intruded FROM fm WHERE id = 5;
-- Real moves pass; one that leaves the token alone writes the token of
-- the writer the UPDATE checked, the one declared for the lock (the C
-- edition keeps the old one).  A row joined twice moves once.
BEGIN;
SELECT dlock_assert('FM', :t2);
UPDATE fm SET k = 2 FROM (VALUES (1), (1)) AS v (x) WHERE fm.id = v.x;
UPDATE fl SET k = 2 WHERE id = 1;
COMMIT;
SELECT tableoid::regclass AS part, id, token = :t1 AS t1, token = :t2 AS t2
  FROM fm WHERE id = 1;
SELECT tableoid::regclass AS part, id, lock, token = :t1 AS t1, token = :t2 AS t2
  FROM fl WHERE id = 1;
SELECT dlock_release('FM', :t2);
SELECT dlock_release('OTHER', :o1);
RESET ROLE;
DROP TABLE fm, fl;
DROP FUNCTION public.fm_intrude(bigint);
