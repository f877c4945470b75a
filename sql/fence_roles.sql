-- Copyright (c) 2026, the dlock developers
--
-- Who vouches for the fence's writer token (issue 24 item 5): a declared
-- token for the role that declared it, wherever the write runs (a
-- referential action, run as the referencing table's owner; a SECURITY
-- DEFINER function); a token the row carries for the current user, except
-- in a referential action, which needs a declaration.  Tokens vary: only
-- comparisons are printed.
--
\set SHOW_CONTEXT never
DROP EXTENSION dlock;
CREATE EXTENSION dlock;
CREATE ROLE regress_dlock_tables;	-- owns the tables
CREATE ROLE regress_dlock_app;		-- holds the leases
CREATE ROLE regress_dlock_other;	-- neither

-- The usual split: one role owns the tables, the application holds leases.
CREATE TABLE orders (id int PRIMARY KEY, token bigint);
CREATE TABLE lines (id int PRIMARY KEY,
  order_id int REFERENCES orders ON DELETE CASCADE ON UPDATE CASCADE,
  v int, token bigint);
CREATE TRIGGER lines_fence BEFORE INSERT OR UPDATE OR DELETE ON lines
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('shop', 'token');
ALTER TABLE orders OWNER TO regress_dlock_tables;
ALTER TABLE lines OWNER TO regress_dlock_tables;
GRANT SELECT, INSERT, UPDATE, DELETE ON orders, lines TO regress_dlock_app;

SET ROLE regress_dlock_app;
SELECT dlock_acquire('shop', '1 min') AS s1 \gset
INSERT INTO orders VALUES (1), (2), (3);
INSERT INTO lines VALUES (10, 1, 0, :s1), (20, 2, 0, :s1), (30, 3, 0, :s1);

-- ON DELETE CASCADE and ON UPDATE CASCADE after a correct dlock_assert.
BEGIN;
SELECT dlock_assert('shop', :s1);
DELETE FROM orders WHERE id = 1;
UPDATE orders SET id = 4 WHERE id = 2;
COMMIT;
SELECT id, order_id FROM lines ORDER BY id;
-- Without a declaration the cascade has no writer's token.
\set VERBOSITY sqlstate
DELETE FROM orders WHERE id = 3;
UPDATE orders SET id = 5 WHERE id = 3;
\set VERBOSITY default

-- A SECURITY DEFINER function of the tables' owner, called by the holder
-- after its dlock_assert: the declaration is the holder's.
RESET ROLE;
CREATE FUNCTION lines_bump() RETURNS void LANGUAGE sql SECURITY DEFINER
  SET search_path = pg_catalog, public
  AS 'UPDATE public.lines SET v = v + 1';
ALTER FUNCTION lines_bump() OWNER TO regress_dlock_tables;
SET ROLE regress_dlock_app;
BEGIN;
SELECT dlock_assert('shop', :s1);
SELECT lines_bump();
COMMIT;
SELECT id, v FROM lines ORDER BY id;
-- The function's own role cannot vouch for a token itself.
RESET ROLE;
CREATE FUNCTION lines_insert(tok bigint) RETURNS void LANGUAGE sql
  SECURITY DEFINER SET search_path = pg_catalog, public
  AS 'INSERT INTO public.lines VALUES (40, NULL, 0, tok)';
ALTER FUNCTION lines_insert(bigint) OWNER TO regress_dlock_tables;
SET ROLE regress_dlock_app;
SELECT lines_insert(:s1);

-- Delegation: a SECURITY DEFINER function owned by the holder, called by
-- another role, writes as the holder; its declaration is the holder's for
-- the rest of the caller's transaction.
RESET ROLE;
CREATE FUNCTION shop_write(tok bigint) RETURNS void LANGUAGE plpgsql
  SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
BEGIN
  PERFORM dlock_assert('shop', tok);
  UPDATE public.lines SET v = v + 10;
END $$;
ALTER FUNCTION shop_write(bigint) OWNER TO regress_dlock_app;
GRANT UPDATE ON lines TO regress_dlock_other;
GRANT SELECT ON lines TO regress_dlock_other;
SET ROLE regress_dlock_other;
BEGIN;
SELECT shop_write(:s1);
UPDATE lines SET v = v + 100;
COMMIT;
SELECT id, v FROM lines ORDER BY id;
-- Without the function, the other role cannot declare.
\set VERBOSITY sqlstate
SELECT dlock_assert('shop', :s1);
UPDATE lines SET v = v + 1000;
\set VERBOSITY default
RESET ROLE;

-- The pin: another role that may update a referenced table writes the
-- holder's current token through ON UPDATE CASCADE.  A token written by a
-- referential action is never the writer's, so the cascade is refused and
-- the other role's transaction keeps no check lock.
CREATE TABLE pin_ref (token bigint PRIMARY KEY);
CREATE TABLE pinned (id int,
  token bigint REFERENCES pin_ref ON UPDATE CASCADE);
CREATE TRIGGER pinned_fence BEFORE INSERT OR UPDATE OR DELETE ON pinned
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('pin', 'token');
ALTER TABLE pin_ref OWNER TO regress_dlock_tables;
ALTER TABLE pinned OWNER TO regress_dlock_tables;
GRANT SELECT, UPDATE ON pin_ref TO regress_dlock_other;
SET ROLE regress_dlock_tables;
SELECT dlock_acquire('pin', '1 min') AS p1 \gset
INSERT INTO pin_ref VALUES (:p1);
INSERT INTO pinned VALUES (1, :p1);
SELECT dlock_release('pin', :p1);
SELECT dlock_acquire('pin', '1 min') AS p2 \gset
SET ROLE regress_dlock_other;
\set VERBOSITY sqlstate
-- (1.1 let it through, and kept the check lock until this ROLLBACK.)
BEGIN;
UPDATE pin_ref SET token = :p2 WHERE token = :p1;
SELECT count(*) AS check_locks FROM pg_locks
  WHERE locktype = 'advisory' AND objsubid = 17484 AND mode = 'RowShareLock'
    AND pid = pg_backend_pid();
ROLLBACK;
UPDATE pin_ref SET token = :p2 WHERE token = :p1;
\set VERBOSITY default
SET ROLE regress_dlock_tables;
SELECT id, token = :p1 AS unchanged FROM pinned;
-- The holder's own cascade passes with its declaration, and may write only
-- the declared token.
BEGIN;
SELECT dlock_assert('pin', :p2);
\set VERBOSITY sqlstate
UPDATE pin_ref SET token = :p2 + 1 WHERE token = :p1;
\set VERBOSITY default
ROLLBACK;
BEGIN;
SELECT dlock_assert('pin', :p2);
UPDATE pin_ref SET token = :p2 WHERE token = :p1;
COMMIT;
SELECT id, token = :p2 AS current FROM pinned;
RESET ROLE;

-- Another role learns nothing of a lease's token from LK001 (outside
-- review of 1.2): the detail does not tell a token below the lease's from
-- one above it, which would find the token by bisection; the holder role
-- is told which.
CREATE FUNCTION pg_temp.stale_detail(lock text, tok bigint) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	d text;
BEGIN
	PERFORM dlock_assert(lock, tok);
	RETURN 'no error';
EXCEPTION WHEN SQLSTATE 'LK001' THEN
	GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
	RETURN d;
END
$$;
SET ROLE regress_dlock_app;
SELECT dlock_acquire('oracle', '1 min') AS o1 \gset
SET ROLE regress_dlock_other;
SELECT pg_temp.stale_detail('oracle', :o1 - 1) AS below, pg_temp.stale_detail('oracle', :o1 + 1) AS above;
SET ROLE regress_dlock_app;
SELECT pg_temp.stale_detail('oracle', :o1 - 1) AS below, pg_temp.stale_detail('oracle', :o1 + 1) AS above;
RESET ROLE;

DROP TABLE pinned, pin_ref, lines, orders;
DROP FUNCTION lines_bump(), lines_insert(bigint), shop_write(bigint);
DROP ROLE regress_dlock_tables, regress_dlock_app, regress_dlock_other;
