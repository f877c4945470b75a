-- Copyright (c) 2026, the dlock developers
--
-- The pending partition move of the SQL edition's fence is the
-- transaction-local setting dlock_sql.fence_move, which any role can set
-- (docs/editions.md).  The holder role forges one, to INSERT a row whose
-- token was never issued (above the current one) into a partition of its
-- own fenced table, naming its real token as the writer: refused (LK001),
-- and nothing written.  A row moved with its old token (below the
-- writer's) still passes.  Tokens vary: only comparisons are printed.
\set SHOW_CONTEXT never
SET search_path = dlock, public;
CREATE TABLE fm (id int, k int, token bigint) PARTITION BY LIST (k);
CREATE TABLE fm1 PARTITION OF fm FOR VALUES IN (1);
CREATE TABLE fm2 PARTITION OF fm FOR VALUES IN (2);
CREATE TRIGGER f BEFORE INSERT OR UPDATE ON fm
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('FM', 'token');
GRANT ALL ON fm, fm1, fm2 TO alice;
SET ROLE alice;
SELECT dlock_acquire('FM', '1 min') AS t1 \gset
INSERT INTO fm VALUES (1, 1, :t1);
SELECT dlock_release('FM', :t1);
SELECT dlock_acquire('FM', '1 min') AS t2 \gset
-- The forged move: stage, statement_timestamp, trigger depth, current
-- user, source partition, md5 of the old row, old lock, new lock, new
-- token, old lock's writer, new lock's writer.
CREATE FUNCTION pg_temp.forge(tok bigint, writer bigint) RETURNS text
  LANGUAGE sql AS $$
  SELECT set_config('dlock_sql.fence_move', array_to_string(ARRAY[
    'insert', statement_timestamp()::text, '1', current_user::text,
    'fm1'::regclass::oid::text, md5('x'), 'FM', 'FM', tok::text,
    writer::text, writer::text], chr(1)), true) $$;
\set VERBOSITY sqlstate
INSERT INTO fm SELECT 2, 2, :t2 + 1000000 FROM pg_temp.forge(:t2 + 1000000, :t2);
\set VERBOSITY default
SELECT count(*) AS rows, count(*) FILTER (WHERE token > :t2) AS above_current FROM fm;
-- A real move that leaves the old token alone keeps it (as in the C
-- edition): the token declared for the lock is the writer.
BEGIN;
SELECT dlock_assert('FM', :t2);
UPDATE fm SET k = 2 WHERE id = 1;
COMMIT;
SELECT tableoid::regclass AS part, token = :t1 AS old_token_kept FROM fm;
SELECT dlock_release('FM', :t2);
RESET ROLE;
DROP TABLE fm;
