-- Copyright (c) 2026, the dlock developers
--
-- 60_fence.sql: the SQL edition's dlock_fence() trigger (issue 26).
--
-- The C edition's trigger (src/fence.c, docs/fencing.md) in PL/pgSQL, with
-- the same arguments, trigger shapes, rules, SQLSTATEs and messages:
--
--   BEFORE INSERT OR UPDATE OR DELETE ... FOR EACH ROW
--     EXECUTE FUNCTION dlock_fence(lock, token_column [, 'name' | 'column'])
--   BEFORE TRUNCATE ... FOR EACH STATEMENT EXECUTE FUNCTION dlock_fence(lock)
--
-- The writer's token is the new row's when the statement changes it (an
-- INSERT, or an UPDATE whose new token differs from the old one), else the
-- token the transaction declared for the row's lock with dlock_assert
-- (dlock_sql_declared); without either the write is refused (LK001).  A
-- token written back unchanged proves nothing, and neither does a MERGE's
-- list of updated columns (the union of its branches): only values are
-- compared.  The writer's token must hold the lease now
-- (dlock_sql_protect, which takes the check protection, a FOR SHARE lock on
-- the lease row kept to the end of the (sub)transaction) and must not be
-- below the row's old token of the same lock.
--
-- Who runs what.  dlock_fence is SECURITY INVOKER: it runs as the writer,
-- so that nothing of the writer's (a domain's CHECK on the token column,
-- evaluated when the trigger fills a token in) ever runs as the extension's
-- owner, who may be a superuser (a script installed by one).  It reads
-- only the catalogs and the row.  The lease is read by SECURITY DEFINER
-- functions executable by PUBLIC: the core's dlock_sql_protect (dlock_check's
-- semantics, 30_lease.sql) and dlock_sql_stale (the LK001 detail), and
-- dlock_sql_fence_holder below.  dlock_sql_protect vouches for a token as
-- the session's role (SET ROLE's, else the session user); a token the row
-- carries is vouched for by the current user as well (as the C edition
-- vouches for it: by the current user), so that a SECURITY DEFINER function
-- owned by another role, or a referential action (which runs as the
-- referencing table's owner), cannot write the holder's token with the
-- caller's protection.  A declared token is vouched for by the session's
-- role at the time of the write, where the C edition takes the role that
-- declared it (docs/editions.md).
--
-- Settings a role can set itself (a declaration, the pending partition move
-- below) are never trusted: every writer's token is checked again by
-- dlock_sql_protect, so a forged value can make the fence refuse, or take a
-- token that holds the lease for a write that would have needed a
-- declaration, but never let a stale token through, nor give a row a
-- token that is neither its own nor its writer's.
--
-- Partition moves.  An UPDATE that moves a row to another partition fires
-- BEFORE UPDATE on the source partition, then BEFORE DELETE (no NEW row)
-- there, then BEFORE INSERT on the target (nodeModifyTable.c: ExecUpdate's
-- BEFORE UPDATE triggers, then ExecUpdateAct finds the partition
-- constraint broken and ExecCrossPartitionUpdate runs ExecDelete, whose
-- BEFORE DELETE triggers fire, then ExecInsert through the root).  The
-- UPDATE is checked in full and leaves the move behind in the
-- transaction-local setting dlock_sql.fence_move; the DELETE of that row,
-- then the INSERT of a row of the new lock and token into a partition of
-- the same tree, pass for the writer the UPDATE checked (checked again).
-- The setting can be forged by the writer's role, and so could anything
-- else the trigger leaves behind for its next call: the trigger runs as
-- the writer, so the writer's role can do whatever it does, call a
-- SECURITY DEFINER function that records the move included, and PL/pgSQL
-- cannot read the old row once its DELETE is done.  So the INSERT half
-- trusts nothing of the move but the writer, whom it checks again (as the
-- UPDATE did: vouched for by the current user too, unless it is the token
-- declared for the lock): the new row's token passes if it is that
-- writer's, a token below it (the old token a move left alone, where the
-- C edition keeps it, or a forged one, never issued for the lock) is
-- replaced by it, a token above it is refused.  Any other call of the
-- trigger in between forgets the move.  PL/pgSQL sees neither the row's
-- TID nor the command id: the move is the statement's
-- (statement_timestamp() and pg_trigger_depth()), the current user's, and
-- the row is recognised by its contents (md5 of its text form).  The
-- statements of one query string share statement_timestamp(): a move left
-- pending by an UPDATE that kept its row where it was may serve the next
-- statement's DELETE of a row with the same contents, or INSERT of a row
-- with the same lock and token, by the same user; the writer is checked
-- again all the same, and is the token such an INSERT writes.

-- The trigger's configuration, checked on every call (the C edition's
-- FenceCheckFiring, FenceConfigure, FenceColumn): how it fires, its
-- arguments, its columns: the slow path of dlock_fence's own check, which
-- raises the error or passes (a domain over bigint, a lock name column,
-- TRUNCATE).  Also returns whether the table is a partition and whether a
-- dlock_fence trigger fences DELETE on it.
CREATE FUNCTION @extschema@.dlock_sql_fence_config(relid pg_catalog.oid, tgname pg_catalog.name,
	tgwhen pg_catalog.text, tglevel pg_catalog.text, tgop pg_catalog.text, args pg_catalog.text[],
	OUT is_partition pg_catalog.bool, OUT fences_delete pg_catalog.bool, OUT ok pg_catalog.bool)
LANGUAGE plpgsql STABLE PARALLEL UNSAFE SECURITY INVOKER
AS $dlock$
DECLARE
	is_truncate CONSTANT pg_catalog.bool := tgop OPERATOR(pg_catalog.=) 'TRUNCATE';
	nargs CONSTANT pg_catalog.int4 := COALESCE(pg_catalog.cardinality(args), 0);
	c record;
	lock_column pg_catalog.text;
BEGIN
	-- TG_ARGV counts from 0; a slice counts from 1.
	args := args[pg_catalog.array_lower(args, 1):pg_catalog.array_upper(args, 1)];
	IF tgwhen OPERATOR(pg_catalog.<>) 'BEFORE'
	   OR tglevel OPERATOR(pg_catalog.<>) (CASE WHEN is_truncate THEN 'STATEMENT' ELSE 'ROW' END) THEN
		RAISE EXCEPTION 'function "dlock_fence" must be fired BEFORE INSERT OR UPDATE OR DELETE FOR EACH ROW, or BEFORE TRUNCATE FOR EACH STATEMENT'
			USING ERRCODE = '39P01';
	END IF;
	SELECT pg_catalog.cardinality(t.tgattr::pg_catalog.int2[]) OPERATOR(pg_catalog.>) 0 AS cols,
		   t.tgqual IS NOT NULL AS qual, r.relname, r.relispartition,
		   EXISTS (SELECT FROM pg_catalog.pg_trigger AS d
					WHERE d.tgrelid OPERATOR(pg_catalog.=) $1 AND d.tgfoid OPERATOR(pg_catalog.=) t.tgfoid
					  AND d.tgenabled OPERATOR(pg_catalog.<>) 'D'
					  AND (d.tgtype::pg_catalog.int4 OPERATOR(pg_catalog.&) 75) OPERATOR(pg_catalog.=) 11) AS del
	  INTO c
	  FROM pg_catalog.pg_trigger AS t
	  JOIN pg_catalog.pg_class AS r ON r.oid OPERATOR(pg_catalog.=) t.tgrelid
	 WHERE t.tgrelid OPERATOR(pg_catalog.=) $1 AND t.tgname OPERATOR(pg_catalog.=) $2;
	IF c.cols THEN
		RAISE EXCEPTION 'trigger "%" on relation "%" has a column list, which function "dlock_fence" does not allow', $2, c.relname
			USING ERRCODE = '39P01',
				  DETAIL = 'An UPDATE that sets none of the listed columns would not be fenced.',
				  HINT = 'Re-create the trigger BEFORE INSERT OR UPDATE OR DELETE, without OF.';
	END IF;
	IF c.qual THEN
		RAISE EXCEPTION 'trigger "%" on relation "%" has a WHEN condition, which function "dlock_fence" does not allow', $2, c.relname
			USING ERRCODE = '39P01',
				  DETAIL = 'A write for which the condition is not true would not be fenced.',
				  HINT = 'Re-create the trigger without WHEN.';
	END IF;
	IF nargs OPERATOR(pg_catalog.<) (CASE WHEN is_truncate THEN 1 ELSE 2 END) OR nargs OPERATOR(pg_catalog.>) 3 THEN
		RAISE EXCEPTION 'trigger "%" on relation "%" passes % argument% to dlock_fence(), but it takes 2 or 3',
			$2, c.relname, nargs, CASE WHEN nargs OPERATOR(pg_catalog.=) 1 THEN '' ELSE 's' END
			USING ERRCODE = '22023',
				  HINT = 'Use dlock_fence(''lock name'', ''token column'') or dlock_fence(''lock name column'', ''token column'', ''column'').';
	END IF;
	IF nargs OPERATOR(pg_catalog.=) 3 AND args[3] OPERATOR(pg_catalog.<>) ALL ('{column,name}') THEN
		RAISE EXCEPTION 'third argument of dlock_fence() in trigger "%" must be "name" or "column", not "%"', $2, args[3]
			USING ERRCODE = '22023';
	END IF;
	lock_column := CASE WHEN nargs OPERATOR(pg_catalog.=) 3 AND args[3] OPERATOR(pg_catalog.=) 'column' THEN args[1] ELSE '' END;
	IF is_truncate AND lock_column OPERATOR(pg_catalog.<>) '' THEN
		RAISE EXCEPTION 'trigger "%" on relation "%" fires on TRUNCATE, which needs a constant lock name', $2, c.relname
			USING ERRCODE = '22023', HINT = 'Use dlock_fence(''lock name'') for a BEFORE TRUNCATE trigger.';
	END IF;
	IF NOT is_truncate THEN
		PERFORM @extschema@.dlock_sql_fence_column($1, c.relname, args[2], true);
	END IF;
	IF lock_column OPERATOR(pg_catalog.<>) '' THEN
		PERFORM @extschema@.dlock_sql_fence_column($1, c.relname, lock_column, false);
	ELSE
		PERFORM @extschema@.dlock_sql_fence_name(args[1]);
	END IF;
	is_partition := c.relispartition;
	fences_delete := c.relispartition AND c.del;
	ok := true;
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_fence_config(pg_catalog.oid, pg_catalog.name, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text[]) IS
	'internal (dlock_fence): check how a dlock_fence trigger fires and what its arguments name, as the C edition does';

-- A column named in the trigger's arguments (FenceColumn): the token column
-- must hold every bigint (bigint or a domain over it, at any depth), the
-- lock name column must be text or varchar.
CREATE FUNCTION @extschema@.dlock_sql_fence_column(relid pg_catalog.oid, relname pg_catalog.name,
	colname pg_catalog.text, is_token pg_catalog.bool)
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL UNSAFE SECURITY INVOKER
AS $dlock$
DECLARE
	atttype pg_catalog.oid;
	base pg_catalog.oid;
BEGIN
	SELECT a.atttypid INTO atttype FROM pg_catalog.pg_attribute AS a
	 WHERE a.attrelid OPERATOR(pg_catalog.=) $1 AND a.attname OPERATOR(pg_catalog.=) $3
	   AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped;
	IF atttype IS NULL THEN
		RAISE EXCEPTION 'column "%" of relation "%" does not exist', $3, $2
			USING ERRCODE = '42703',
				  DETAIL = CASE WHEN is_token THEN 'Trigger function dlock_fence() names it as the token column.'
								ELSE 'Trigger function dlock_fence() names it as the lock name column.' END;
	END IF;
	IF NOT is_token THEN
		IF atttype OPERATOR(pg_catalog.<>) ALL ('{pg_catalog.text,pg_catalog.varchar}'::pg_catalog.regtype[]) THEN
			RAISE EXCEPTION 'column "%" of relation "%" has type %, but the lock name column must be of type text',
				$3, $2, pg_catalog.format_type(atttype, NULL)
				USING ERRCODE = '42804';
		END IF;
		RETURN;
	END IF;
	base := atttype;
	WHILE (SELECT ty.typtype FROM pg_catalog.pg_type AS ty WHERE ty.oid OPERATOR(pg_catalog.=) base) OPERATOR(pg_catalog.=) 'd' LOOP
		SELECT ty.typbasetype INTO base FROM pg_catalog.pg_type AS ty WHERE ty.oid OPERATOR(pg_catalog.=) base;
	END LOOP;
	IF base OPERATOR(pg_catalog.<>) 'pg_catalog.int8'::pg_catalog.regtype THEN
		RAISE EXCEPTION 'column "%" of relation "%" has type %, but the token column must be of type bigint',
			$3, $2, pg_catalog.format_type(atttype, NULL)
			USING ERRCODE = '42804',
				  HINT = pg_catalog.format('Change column "%s" to type bigint, or to a domain over bigint: tokens do not fit in a narrower type.', $3);
	END IF;
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_fence_column(pg_catalog.oid, pg_catalog.name, pg_catalog.text, pg_catalog.bool) IS
	'internal (dlock_fence): check the token column (bigint or a domain over it) or the lock name column (text or varchar) a dlock_fence trigger names';

-- A lock name: not NULL (22004), not empty, at most 255 bytes (22023).
CREATE FUNCTION @extschema@.dlock_sql_fence_name(lock pg_catalog.text, relname pg_catalog.name DEFAULT NULL,
	colname pg_catalog.text DEFAULT NULL)
RETURNS pg_catalog.text
LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE SECURITY INVOKER
AS $dlock$
BEGIN
	IF lock IS NULL THEN
		RAISE EXCEPTION 'lock name must not be null'
			USING ERRCODE = '22004', DETAIL = pg_catalog.format('Column "%s" of relation "%s" is null.', colname, relname);
	END IF;
	IF lock OPERATOR(pg_catalog.=) '' THEN
		RAISE EXCEPTION 'lock name must not be empty' USING ERRCODE = '22023';
	END IF;
	IF pg_catalog.octet_length(lock) OPERATOR(pg_catalog.>) 255 THEN
		RAISE EXCEPTION 'lock name is too long'
			USING ERRCODE = '22023',
				  DETAIL = pg_catalog.format('A lock name has at most %s bytes; this one has %s.', 255, pg_catalog.octet_length(lock));
	END IF;
	RETURN lock;
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_fence_name(pg_catalog.text, pg_catalog.name, pg_catalog.text) IS
	'internal (dlock_fence): check a lock name as every dlock function does';

-- The writer's token for a write that carries none (FenceDeclared and
-- FenceRejectUndeclared): the token this transaction declared for lock, or
-- LK001 saying why the write needs one.
CREATE FUNCTION @extschema@.dlock_sql_fence_declared(lock pg_catalog.text, relname pg_catalog.name,
	token_column pg_catalog.text, need pg_catalog.text)
RETURNS pg_catalog.int8
LANGUAGE plpgsql STABLE PARALLEL UNSAFE SECURITY INVOKER
AS $dlock$
DECLARE
	declared CONSTANT pg_catalog.int8 := @extschema@.dlock_sql_declared(lock);
BEGIN
	IF declared IS NOT NULL THEN
		RETURN declared;
	END IF;
	RAISE EXCEPTION 'write to relation "%" has no fencing token for lock "%"', relname, lock
		USING ERRCODE = 'LK001',
			  DETAIL = CASE need
				  WHEN 'null' THEN pg_catalog.format('Column "%s" is null, and this transaction has declared no token for the lock.', token_column)
				  WHEN 'unchanged' THEN pg_catalog.format('The UPDATE leaves column "%s" unchanged, and this transaction has declared no token for the lock.', token_column)
				  WHEN 'old lock' THEN 'The UPDATE moves the row off this lock, and this transaction has declared no token for it.'
				  WHEN 'delete' THEN 'A DELETE carries no token, and this transaction has declared no token for the lock.'
				  ELSE 'A TRUNCATE carries no token, and this transaction has declared no token for the lock.' END,
			  HINT = 'Call dlock_assert(lock, token) earlier in the transaction to declare the token it writes with.';
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_fence_declared(pg_catalog.text, pg_catalog.name, pg_catalog.text, pg_catalog.text) IS
	'internal (dlock_fence): the token this transaction declared for lock, or SQLSTATE LK001 naming what the write lacks';

-- The holder role of name's lease while token is its token, else NULL (the
-- core's identity rule, dlock_sql_holder): for dlock_sql_fence_check, which
-- vouches for a carried token as the current user too.  Only who presents
-- the current token learns the holder role.
CREATE FUNCTION @extschema@.dlock_sql_fence_holder(name pg_catalog.text, token pg_catalog.int8)
RETURNS pg_catalog.oid
LANGUAGE sql STABLE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $dlock$
	SELECT @extschema@.dlock_sql_holder(l.role, l.role_oid, l.role_system_identifier, l.role_counter_relfilenode)
	  FROM @extschema@.dlock_lease AS l
	 WHERE l.name OPERATOR(pg_catalog.=) $1 AND l.token OPERATOR(pg_catalog.=) $2;
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_fence_holder(pg_catalog.text, pg_catalog.int8) IS
	'internal (dlock_fence): the holder role of the lease of name if token is its token, else NULL';
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_fence_holder(pg_catalog.text, pg_catalog.int8) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.dlock_sql_fence_holder(pg_catalog.text, pg_catalog.int8) TO PUBLIC;

-- The writer's token must not be below row_token (the row's old token of
-- the same lock) and must hold the lease, vouched for by the session's role
-- (dlock_sql_protect, which takes the check protection).  A token the row
-- carries (carried) is vouched for by the current user as well, as in the
-- C edition: a SECURITY DEFINER function owned by another role, or a
-- referential action (run as the referencing table's owner), cannot write
-- the holder's token into a row with the caller's protection.
CREATE FUNCTION @extschema@.dlock_sql_fence_check(lock pg_catalog.text, writer pg_catalog.int8,
	row_token pg_catalog.int8, carried pg_catalog.bool)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $dlock$
DECLARE
	holder pg_catalog.oid;
	session_role pg_catalog.text;
BEGIN
	IF writer OPERATOR(pg_catalog.<) row_token THEN
		RAISE EXCEPTION 'stale fencing token % for lock "%"', writer, lock
			USING ERRCODE = 'LK001', DETAIL = pg_catalog.format('The row was written with the newer token %s.', row_token);
	END IF;
	IF NOT @extschema@.dlock_sql_protect(lock, writer) THEN
		PERFORM @extschema@.dlock_sql_stale(lock, writer);
	END IF;
	IF carried THEN
		session_role := pg_catalog.current_setting('role');
		IF session_role OPERATOR(pg_catalog.=) 'none' THEN
			session_role := SESSION_USER;
		END IF;
	END IF;
	IF carried AND CURRENT_USER::pg_catalog.text OPERATOR(pg_catalog.<>) session_role THEN
		holder := @extschema@.dlock_sql_fence_holder(lock, writer);
		IF NOT @extschema@.dlock_sql_acts_for(
				(SELECT r.oid FROM pg_catalog.pg_roles AS r WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER), holder) THEN
			PERFORM @extschema@.dlock_sql_deny(lock, holder, 'check');
		END IF;
	END IF;
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_fence_check(pg_catalog.text, pg_catalog.int8, pg_catalog.int8, pg_catalog.bool) IS
	'internal (dlock_fence): SQLSTATE LK001 unless writer is not below row_token and holds the lease of lock (taking the check protection); 42501 unless the session''s role, and for a carried token the current user, may vouch for it';

-- The pending partition move (see above) as a text array: stage ('delete'
-- or 'insert'), statement_timestamp, trigger depth, current user, source
-- partition, md5 of the old row, old lock, new lock, new token, old lock's
-- writer, new lock's writer.  NULL if none is pending for this statement.
CREATE FUNCTION @extschema@.dlock_sql_fence_move(stage pg_catalog.text)
RETURNS pg_catalog.text[]
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $dlock$
DECLARE
	move pg_catalog.text[] := pg_catalog.string_to_array(
		pg_catalog.current_setting('dlock_sql.fence_move', true), pg_catalog.chr(1));
BEGIN
	IF move IS NULL OR pg_catalog.cardinality(move) OPERATOR(pg_catalog.<>) 11 THEN
		RETURN NULL;
	END IF;
	-- Any call of the trigger forgets it.
	PERFORM pg_catalog.set_config('dlock_sql.fence_move', '', true);
	IF move[1] OPERATOR(pg_catalog.=) stage
	   AND move[2] OPERATOR(pg_catalog.=) pg_catalog.statement_timestamp()::pg_catalog.text
	   AND move[3] OPERATOR(pg_catalog.=) pg_catalog.pg_trigger_depth()::pg_catalog.text
	   AND move[4] OPERATOR(pg_catalog.=) CURRENT_USER::pg_catalog.text THEN
		RETURN move;
	END IF;
	RETURN NULL;
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_fence_move(pg_catalog.text) IS
	'internal (dlock_fence): the partition move pending at stage for this statement and user, if any; forgets any pending move';

-- Remember the partition move an UPDATE of a partition may be making (see
-- above): its DELETE comes next where a dlock_fence trigger fences DELETE
-- (FenceRelFencesDelete), else its INSERT.
CREATE FUNCTION @extschema@.dlock_sql_fence_moving(relid pg_catalog.oid, old_row pg_catalog.text,
	old_lock pg_catalog.text, lock pg_catalog.text, tok pg_catalog.int8, old_writer pg_catalog.int8, writer pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $dlock$
DECLARE
	fences_delete CONSTANT pg_catalog.bool := EXISTS (
		SELECT FROM pg_catalog.pg_trigger AS d
		 WHERE d.tgrelid OPERATOR(pg_catalog.=) relid
		   AND d.tgfoid OPERATOR(pg_catalog.=) '@extschema@.dlock_fence()'::pg_catalog.regprocedure
		   AND d.tgenabled OPERATOR(pg_catalog.<>) 'D'
		   AND (d.tgtype::pg_catalog.int4 OPERATOR(pg_catalog.&) 75) OPERATOR(pg_catalog.=) 11);
BEGIN
	PERFORM pg_catalog.set_config('dlock_sql.fence_move', pg_catalog.array_to_string(ARRAY[
		CASE WHEN fences_delete THEN 'delete' ELSE 'insert' END,
		pg_catalog.statement_timestamp()::pg_catalog.text, pg_catalog.pg_trigger_depth()::pg_catalog.text,
		CURRENT_USER::pg_catalog.text, relid::pg_catalog.text, old_row,
		old_lock, lock, tok::pg_catalog.text, old_writer::pg_catalog.text, writer::pg_catalog.text], pg_catalog.chr(1)), true);
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_fence_moving(pg_catalog.oid, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.int8, pg_catalog.int8, pg_catalog.int8) IS
	'internal (dlock_fence): remember the partition move an UPDATE of a fenced partition may be making';


-- The catalog half of dlock_fence's check of its configuration, in one
-- query: no column list, no WHEN condition, a bigint token column (type
-- OID 20).  Whether the table is a partition if all passes, else NULL.
CREATE FUNCTION @extschema@.dlock_sql_fence_ok(relid pg_catalog.oid, tgname pg_catalog.name, token_column pg_catalog.text)
RETURNS pg_catalog.bool
LANGUAGE plpgsql STABLE PARALLEL UNSAFE SECURITY INVOKER
AS $dlock$
DECLARE
	part pg_catalog.bool;
BEGIN
	SELECT r.relispartition INTO part
	  FROM pg_catalog.pg_trigger AS t, pg_catalog.pg_attribute AS a, pg_catalog.pg_class AS r
	 WHERE t.tgrelid OPERATOR(pg_catalog.=) $1 AND t.tgname OPERATOR(pg_catalog.=) $2
	   AND pg_catalog.cardinality(t.tgattr::pg_catalog.int2[]) OPERATOR(pg_catalog.=) 0 AND t.tgqual IS NULL
	   AND a.attrelid OPERATOR(pg_catalog.=) $1 AND a.attname OPERATOR(pg_catalog.=) $3
	   AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped AND a.atttypid OPERATOR(pg_catalog.=) 20
	   AND r.oid OPERATOR(pg_catalog.=) $1;
	RETURN part;
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_fence_ok(pg_catalog.oid, pg_catalog.name, pg_catalog.text) IS
	'internal (dlock_fence): whether the table is a partition if the trigger has no column list, no WHEN condition and a bigint token column; else NULL';

-- An UPDATE that moves the row to another lock (the rest of FenceUpdate;
-- dlock_fence does an UPDATE that keeps its lock itself): the new row's
-- lock against the new token if the statement changes it, else against
-- the token declared for it, and the old lock against the token declared
-- for it (tokens compared per lock).  w is the new lock's writer, ow the
-- old lock's; fill: write w into the new row (a NULL token, or a token left
-- alone, which belongs to the old lock).
CREATE FUNCTION @extschema@.dlock_sql_fence_move_lock(lock pg_catalog.text, old_lock pg_catalog.text,
	tok pg_catalog.int8, old_tok pg_catalog.int8, relname pg_catalog.name, token_column pg_catalog.text,
	OUT w pg_catalog.int8, OUT ow pg_catalog.int8, OUT fill pg_catalog.bool)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $dlock$
DECLARE
	carried CONSTANT pg_catalog.bool := tok IS NOT NULL AND (old_tok IS NULL OR tok OPERATOR(pg_catalog.<>) old_tok);
BEGIN
	IF carried THEN
		w := tok;
	ELSE
		w := @extschema@.dlock_sql_fence_declared(lock, relname, token_column,
												   CASE WHEN tok IS NULL THEN 'null' ELSE 'unchanged' END);
	END IF;
	fill := tok IS NULL OR w OPERATOR(pg_catalog.<>) tok;
	PERFORM @extschema@.dlock_sql_fence_check(lock, w, NULL, carried);
	ow := @extschema@.dlock_sql_fence_declared(old_lock, relname, token_column, 'old lock');
	PERFORM @extschema@.dlock_sql_fence_check(old_lock, ow, old_tok, false);
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_fence_move_lock(pg_catalog.text, pg_catalog.text, pg_catalog.int8, pg_catalog.int8, pg_catalog.name, pg_catalog.text) IS
	'internal (dlock_fence): check the writers of an UPDATE that moves a fenced row from one lock to another';

-- BEFORE INSERT (FenceInsert): the writer's token is the row's, or for a
-- NULL token the declared one (returned, to be filled in), or for the
-- INSERT half of a partition move the one its UPDATE checked, which is
-- returned, to be filled in, where the moved row's token is below it.
CREATE FUNCTION @extschema@.dlock_sql_fence_insert(lock pg_catalog.text, tok pg_catalog.int8,
	relid pg_catalog.oid, relname pg_catalog.name, token_column pg_catalog.text, is_partition pg_catalog.bool)
RETURNS pg_catalog.int8
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $dlock$
DECLARE
	move CONSTANT pg_catalog.text[] := @extschema@.dlock_sql_fence_move('insert');
	w pg_catalog.int8;
BEGIN
	IF move IS NOT NULL AND tok IS NOT NULL AND is_partition
	   AND tok::pg_catalog.text OPERATOR(pg_catalog.=) move[9] AND lock OPERATOR(pg_catalog.=) move[8] COLLATE pg_catalog."C"
	   AND pg_catalog.pg_partition_root(relid) OPERATOR(pg_catalog.=) pg_catalog.pg_partition_root(move[5]::pg_catalog.oid) THEN
		w := move[11]::pg_catalog.int8;
		-- The pending move is a setting the writer's role can forge, so
		-- the moved row's token is never trusted: it passes only if it is
		-- the writer's, which must hold the lease, and a token below it
		-- (the old token a move left alone, or a forged one never issued
		-- for the lock) is replaced by the writer's; a token above it,
		-- where no token was ever issued, is refused below.
		-- The UPDATE's writer was declared, or carried in its row and
		-- vouched for by the current user (the same user) too: so is it
		-- here, unless it is the declared one.
		IF tok OPERATOR(pg_catalog.<=) w THEN
			PERFORM @extschema@.dlock_sql_fence_check(lock, w, NULL,
				@extschema@.dlock_sql_declared(lock) IS DISTINCT FROM w);
			RETURN CASE WHEN tok OPERATOR(pg_catalog.<) w THEN w END;
		END IF;
	END IF;
	IF tok IS NOT NULL THEN
		PERFORM @extschema@.dlock_sql_fence_check(lock, tok, NULL, true);
		RETURN NULL;
	END IF;
	w := @extschema@.dlock_sql_fence_declared(lock, relname, token_column, 'null');
	PERFORM @extschema@.dlock_sql_fence_check(lock, w, NULL, false);
	RETURN w;
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_fence_insert(pg_catalog.text, pg_catalog.int8, pg_catalog.oid, pg_catalog.name, pg_catalog.text, pg_catalog.bool) IS
	'internal (dlock_fence): check the writer of an INSERT of a fenced row; the token to fill in: the declared one for a NULL token, the writer''s for the INSERT half of a partition move whose token is below it';

-- BEFORE DELETE (FenceDelete): the old row's lock against the declared
-- token, or for the DELETE half of a partition move against the token its
-- UPDATE checked for the old lock (the move then waits for its INSERT).
CREATE FUNCTION @extschema@.dlock_sql_fence_delete(lock pg_catalog.text, tok pg_catalog.int8, old_row pg_catalog.jsonb,
	relid pg_catalog.oid, relname pg_catalog.name, token_column pg_catalog.text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $dlock$
DECLARE
	move pg_catalog.text[] := @extschema@.dlock_sql_fence_move('delete');
BEGIN
	IF move IS NOT NULL AND move[5] OPERATOR(pg_catalog.=) relid::pg_catalog.text
	   AND move[6] OPERATOR(pg_catalog.=) pg_catalog.md5(old_row::pg_catalog.text) AND lock OPERATOR(pg_catalog.=) move[7] COLLATE pg_catalog."C" THEN
		move[1] := 'insert';
		PERFORM pg_catalog.set_config('dlock_sql.fence_move', pg_catalog.array_to_string(move, pg_catalog.chr(1)), true);
		PERFORM @extschema@.dlock_sql_fence_check(lock, move[10]::pg_catalog.int8, tok, false);
	ELSE
		PERFORM @extschema@.dlock_sql_fence_check(lock,
			@extschema@.dlock_sql_fence_declared(lock, relname, token_column, 'delete'), tok, false);
	END IF;
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_fence_delete(pg_catalog.text, pg_catalog.int8, pg_catalog.jsonb, pg_catalog.oid, pg_catalog.name, pg_catalog.text) IS
	'internal (dlock_fence): check the writer of a DELETE of a fenced row';

-- dlock_fence(lock, token_column [, kind]): the fencing trigger.  lock is
-- the lock name, or with kind 'column' the name of a text column that
-- holds each row's lock name.  An UPDATE that keeps its row's lock, the
-- common write, is done here with no call of another PL/pgSQL function
-- but the checks of the configuration and of the lease, unless it is
-- refused.  The configuration is checked on every call, in one catalog
-- query (dlock_sql_fence_ok): how the trigger fires, its arguments, a
-- bigint token column (type OID 20), and whether the table is a
-- partition; what does not pass (a domain over bigint among it,
-- a lock name column, TRUNCATE) goes to dlock_sql_fence_config, which
-- raises the C edition's error or passes.  Any call of the trigger forgets
-- a pending partition move.
CREATE FUNCTION @extschema@.dlock_fence()
RETURNS trigger
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $dlock$
DECLARE
	tokcol CONSTANT pg_catalog.text := TG_ARGV[1];
	lockcol CONSTANT pg_catalog.text := CASE WHEN TG_ARGV[2] OPERATOR(pg_catalog.=) 'column' THEN TG_ARGV[0] ELSE '' END;
	j pg_catalog.json;
	oj pg_catalog.json;
	is_partition pg_catalog.bool;
	lock pg_catalog.text := TG_ARGV[0];
	old_lock pg_catalog.text := TG_ARGV[0];
	tok pg_catalog.int8;
	old_tok pg_catalog.int8;
	w pg_catalog.int8;
	ow pg_catalog.int8;
	fill pg_catalog.bool := false;
BEGIN
	is_partition := CASE WHEN TG_WHEN OPERATOR(pg_catalog.=) 'BEFORE' AND TG_LEVEL OPERATOR(pg_catalog.=) 'ROW'
	   AND (TG_NARGS OPERATOR(pg_catalog.=) 2 OR (TG_NARGS OPERATOR(pg_catalog.=) 3 AND TG_ARGV[2] OPERATOR(pg_catalog.=) 'name'))
	   AND TG_ARGV[0] OPERATOR(pg_catalog.<>) '' AND pg_catalog.octet_length(TG_ARGV[0]) OPERATOR(pg_catalog.<=) 255
		THEN @extschema@.dlock_sql_fence_ok(TG_RELID, TG_NAME, tokcol) END;
	IF is_partition IS NULL THEN
		SELECT c.is_partition INTO is_partition FROM @extschema@.dlock_sql_fence_config(TG_RELID, TG_NAME, TG_WHEN, TG_LEVEL, TG_OP, TG_ARGV) AS c;
	END IF;
	IF TG_OP OPERATOR(pg_catalog.=) 'TRUNCATE' THEN
		PERFORM @extschema@.dlock_sql_fence_move(''), @extschema@.dlock_sql_fence_check(lock,
			@extschema@.dlock_sql_fence_declared(lock, TG_TABLE_NAME, tokcol, 'truncate'), NULL, false);
		RETURN NULL;
	END IF;
	IF TG_OP OPERATOR(pg_catalog.<>) 'INSERT' THEN
		oj := pg_catalog.row_to_json(OLD);
		old_tok := (oj OPERATOR(pg_catalog.->>) tokcol)::pg_catalog.int8;
		IF lockcol OPERATOR(pg_catalog.<>) '' THEN
			old_lock := @extschema@.dlock_sql_fence_name(oj OPERATOR(pg_catalog.->>) lockcol, TG_TABLE_NAME, lockcol);
		END IF;
	END IF;
	IF TG_OP OPERATOR(pg_catalog.=) 'DELETE' THEN
		PERFORM @extschema@.dlock_sql_fence_delete(old_lock, old_tok, pg_catalog.to_jsonb(OLD), TG_RELID, TG_TABLE_NAME, tokcol);
		RETURN OLD;
	END IF;
	j := pg_catalog.row_to_json(NEW);
	tok := (j OPERATOR(pg_catalog.->>) tokcol)::pg_catalog.int8;
	IF lockcol OPERATOR(pg_catalog.<>) '' THEN
		lock := @extschema@.dlock_sql_fence_name(j OPERATOR(pg_catalog.->>) lockcol, TG_TABLE_NAME, lockcol);
	END IF;
	IF TG_OP OPERATOR(pg_catalog.=) 'INSERT' THEN
		w := @extschema@.dlock_sql_fence_insert(lock, tok, TG_RELID, TG_TABLE_NAME, tokcol, is_partition);
		IF w IS NOT NULL THEN
			NEW := pg_catalog.jsonb_populate_record(NEW, pg_catalog.jsonb_build_object(tokcol, w));
		END IF;
		RETURN NEW;
	END IF;
	IF pg_catalog.current_setting('dlock_sql.fence_move', true) OPERATOR(pg_catalog.<>) '' THEN
		PERFORM pg_catalog.set_config('dlock_sql.fence_move', '', true);
	END IF;
	IF lock OPERATOR(pg_catalog.<>) old_lock COLLATE pg_catalog."C" THEN
		SELECT m.w, m.ow, m.fill INTO w, ow, fill
		  FROM @extschema@.dlock_sql_fence_move_lock(lock, old_lock, tok, old_tok, TG_TABLE_NAME, tokcol) AS m;
	ELSIF tok IS NOT NULL AND (old_tok IS NULL OR tok OPERATOR(pg_catalog.<>) old_tok) THEN
		w := tok;
		PERFORM @extschema@.dlock_sql_fence_check(lock, w, old_tok, true);
	ELSE
		w := @extschema@.dlock_sql_declared(lock);
		IF w IS NULL OR w OPERATOR(pg_catalog.<) old_tok OR NOT @extschema@.dlock_sql_protect(lock, w) THEN
			PERFORM @extschema@.dlock_sql_fence_check(lock,
				@extschema@.dlock_sql_fence_declared(lock, TG_TABLE_NAME, tokcol, CASE WHEN tok IS NULL THEN 'null' ELSE 'unchanged' END),
				old_tok, false);
		END IF;
	END IF;
	IF tok IS NULL OR fill THEN
		NEW := pg_catalog.jsonb_populate_record(NEW, pg_catalog.jsonb_build_object(tokcol, w));
		tok := w;
	END IF;
	IF is_partition THEN
		PERFORM @extschema@.dlock_sql_fence_moving(TG_RELID, pg_catalog.md5(pg_catalog.to_jsonb(OLD)::pg_catalog.text), old_lock, lock, tok,
												   COALESCE(ow, w), w);
	END IF;
	RETURN NEW;
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_fence() IS
	'fencing trigger: BEFORE INSERT OR UPDATE OR DELETE FOR EACH ROW EXECUTE FUNCTION dlock_fence(lock, token_column [, ''column'']), and BEFORE TRUNCATE FOR EACH STATEMENT EXECUTE FUNCTION dlock_fence(lock); a write that does not carry a new token needs the token declared by dlock_assert; stale writers get SQLSTATE LK001';
