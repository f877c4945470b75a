-- Copyright (c) 2026, the dlock developers
--
-- 20_token.sql: fencing tokens in the SQL edition (docs/tokens.md for the
-- scheme, docs/editions.md for what differs from src/token.c).
--
-- A drawn token t = nextval(dlock_token_seq) is accepted when the latest
-- epoch row is of the current history (database OID, the counter's
-- relfilenode, and the timeline and system identifier where the installing
-- role may read them), t > its floor, t > the name's last token, and, where
-- the timeline or the system identifier cannot be read, t >= clock - 1 s (the clock rule: the counter
-- never trails the clock by more than a second, so a history that lost WAL
-- starts above every token the lost WAL handed out, as a new timeline does).
-- Otherwise the draw jumps: jumpers run one after the other (a table lock
-- on dlock_sql_jump, held from the read of the counter to its setval), and
-- the counter is set to
--
--		F = max(t, last, highest token in dlock_lease, clock, floor + 1,
--				floor + (clock - jumped_at), counter's last_value + M) + 1
--
-- with M = 1 s of microseconds.  Draws on the fast path take no lock, so one
-- may run between the jumper's read of last_value and its setval: M bounds
-- that.  A duplicate would need more than M (a million) draws by others
-- between two statements of the jumper.

-- The history this database's counter runs in now.  SECURITY INVOKER:
-- called by the SECURITY DEFINER functions below, it reads what their owner
-- may read.
CREATE FUNCTION @extschema@.dlock_sql_history(
	OUT system_identifier pg_catalog.int8,
	OUT timeline pg_catalog.int8,
	OUT database_oid pg_catalog.oid,
	OUT counter_relfilenode pg_catalog.oid)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $dlock$
BEGIN
	IF pg_catalog.has_function_privilege('pg_catalog.pg_control_system()', 'EXECUTE') THEN
		SELECT c.system_identifier INTO system_identifier FROM pg_catalog.pg_control_system() AS c;
	END IF;
	IF pg_catalog.has_function_privilege('pg_catalog.pg_current_wal_insert_lsn()', 'EXECUTE')
	   AND pg_catalog.has_function_privilege('pg_catalog.pg_walfile_name(pg_catalog.pg_lsn)', 'EXECUTE') THEN
		timeline := ('x' || pg_catalog.substr(
						pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_insert_lsn()), 1, 8))
					::pg_catalog.bit(32)::pg_catalog.int4::pg_catalog.int8;
	END IF;
	SELECT d.oid INTO database_oid FROM pg_catalog.pg_database AS d
	 WHERE d.datname = pg_catalog.current_database();
	counter_relfilenode := pg_catalog.pg_relation_filenode('@extschema@.dlock_token_seq'::pg_catalog.regclass);
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_history() FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_history() IS
	'internal: the history of the token counter (system identifier and timeline where readable, database OID, the counter''s relfilenode)';

-- The server clock in microseconds since 1970.
CREATE FUNCTION @extschema@.dlock_sql_clock_us()
RETURNS pg_catalog.int8
LANGUAGE sql VOLATILE PARALLEL UNSAFE
AS $dlock$SELECT pg_catalog.trunc(EXTRACT(epoch FROM pg_catalog.clock_timestamp()) * 1000000)::pg_catalog.int8$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_clock_us() FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_clock_us() IS
	'internal: the server clock (clock_timestamp()) in microseconds since 1970';

-- May token t be handed out in history cur, after the epoch row ep?
CREATE FUNCTION @extschema@.dlock_sql_token_ok(t pg_catalog.int8, last pg_catalog.int8,
	ep @extschema@.dlock_epoch, cur record)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $dlock$
BEGIN
	RETURN ep.floor IS NOT NULL
		AND ep.system_identifier IS NOT DISTINCT FROM cur.system_identifier
		AND ep.timeline IS NOT DISTINCT FROM cur.timeline
		AND ep.database_oid = cur.database_oid
		AND ep.counter_relfilenode = cur.counter_relfilenode
		AND t > ep.floor
		AND t > last
		AND ((cur.timeline IS NOT NULL AND cur.system_identifier IS NOT NULL)
			 OR t >= @extschema@.dlock_sql_clock_us() - 1000000);
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_token_ok(pg_catalog.int8, pg_catalog.int8, @extschema@.dlock_epoch, record) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_token_ok(pg_catalog.int8, pg_catalog.int8, @extschema@.dlock_epoch, record) IS
	'internal: may token t be handed out without a jump (same history as the epoch row, above its floor and last, the clock rule where the timeline is unreadable)';

-- Why a draw after the epoch row ep must jump in history cur.
CREATE FUNCTION @extschema@.dlock_sql_jump_reason(t pg_catalog.int8, last pg_catalog.int8,
	ep @extschema@.dlock_epoch, cur record)
RETURNS pg_catalog.text
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $dlock$
BEGIN
RETURN CASE
	WHEN ep.floor IS NULL THEN 'first'
	WHEN ep.system_identifier IS DISTINCT FROM cur.system_identifier THEN 'system'
	WHEN ep.database_oid <> cur.database_oid THEN 'database'
	WHEN ep.timeline IS DISTINCT FROM cur.timeline THEN 'timeline'
	WHEN ep.counter_relfilenode <> cur.counter_relfilenode THEN 'counter'
	WHEN t <= ep.floor THEN 'floor'
	WHEN t <= last THEN 'lease'
	ELSE 'clock' END;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_jump_reason(pg_catalog.int8, pg_catalog.int8, @extschema@.dlock_epoch, record) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_jump_reason(pg_catalog.int8, pg_catalog.int8, @extschema@.dlock_epoch, record) IS
	'internal: the reason recorded in dlock_epoch for a jump';

-- Refuse counter settings under which a token could repeat or go down
-- (src/token.c, TokenCheckCounter; 55000).  Checked at every jump, which
-- is enough: every ALTER SEQUENCE of these settings gives the counter a new
-- relfilenode (PostgreSQL 14 to 18), a new history, so the next draw jumps,
-- and a refused jump records nothing, so every draw after it jumps again.
-- INCREMENT must be exactly 1 (the C edition takes any above 0): the
-- jump's margin M is a million draws only at an increment of 1.
CREATE FUNCTION @extschema@.dlock_sql_counter_check()
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL SAFE SECURITY INVOKER
AS $dlock$
DECLARE
	s record;
	hint pg_catalog.text := 'Restore the settings with ALTER SEQUENCE ... AS bigint INCREMENT 1 NO MAXVALUE CACHE 1 NO CYCLE.';
BEGIN
	SELECT q.seqcache, q.seqcycle, q.seqincrement, q.seqmax, c.relpersistence INTO s
	  FROM pg_catalog.pg_sequence AS q
	  JOIN pg_catalog.pg_class AS c ON c.oid = q.seqrelid
	 WHERE q.seqrelid = '@extschema@.dlock_token_seq'::pg_catalog.regclass;
	IF s.seqcache > 1 THEN
		RAISE EXCEPTION 'sequence "%" of dlock could hand out tokens out of order', 'dlock_token_seq'
			USING ERRCODE = '55000',
				  DETAIL = pg_catalog.format('Its CACHE is %s; backends would hand out cached values out of order.', s.seqcache),
				  HINT = hint;
	ELSIF s.seqcycle THEN
		RAISE EXCEPTION 'sequence "%" of dlock could hand out a token twice', 'dlock_token_seq'
			USING ERRCODE = '55000',
				  DETAIL = 'It is set to CYCLE, so it would start again at its minimum.',
				  HINT = hint;
	ELSIF s.seqincrement <= 0 THEN
		RAISE EXCEPTION 'sequence "%" of dlock could hand out tokens that go down', 'dlock_token_seq'
			USING ERRCODE = '55000',
				  DETAIL = pg_catalog.format('Its INCREMENT is %s; tokens must rise.', s.seqincrement),
				  HINT = hint;
	ELSIF s.seqincrement <> 1 THEN
		RAISE EXCEPTION 'sequence "%" of dlock could hand out a token twice', 'dlock_token_seq'
			USING ERRCODE = '55000',
				  DETAIL = pg_catalog.format('Its INCREMENT is %s; the margin that keeps concurrent jumps apart counts draws of 1.', s.seqincrement),
				  HINT = hint;
	ELSIF s.seqmax < 9223372036854775807 THEN
		RAISE EXCEPTION 'sequence "%" of dlock could run out of tokens', 'dlock_token_seq'
			USING ERRCODE = '55000',
				  DETAIL = pg_catalog.format('Its MAXVALUE is %s; tokens need the whole range of bigint.', s.seqmax),
				  HINT = hint;
	ELSIF s.relpersistence <> 'p' THEN
		RAISE EXCEPTION 'relation "%" of dlock is unlogged', 'dlock_token_seq'
			USING ERRCODE = '55000',
				  DETAIL = 'A crash empties an unlogged relation, and tokens handed out before it could be handed out again.',
				  HINT = 'Make it logged again with ALTER SEQUENCE ... SET LOGGED.';
	END IF;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_counter_check() FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_counter_check() IS
	'internal: refuse (55000) a token counter whose CACHE, CYCLE, INCREMENT, MAXVALUE or persistence could repeat a token or make one go down';

-- Jump: t was drawn and refused (or reason is 'rebase').  Returns the new
-- token; *floor is recorded in dlock_epoch in the calling transaction.
--
-- Jumpers serialise from their read of the counter to their setval: under
-- SHARE UPDATE EXCLUSIVE on dlock_sql_jump, a mode that conflicts with
-- itself and with no lock another role can take on a table it has no
-- privilege on (a prepared statement keeps at most ROW EXCLUSIVE without a
-- privilege check; ANALYZE gives its lock back when it skips the table).
-- The lock is taken in an inner block that ends by raising DLKJP, so it is
-- given back as soon as the setval is done, not when the (perhaps long)
-- jumping transaction ends: setval and nextval are not rolled back, and the
-- block's subtransaction gets no XID (a table lock needs none; nextval and
-- setval assign the top transaction's).  The record is written after it,
-- without waiting for another jumper's record.  Since the lock is held
-- only for those few statements, it is waited for up to 50 ms whatever
-- the caller's wait: an acquire with wait => 0 of a free name must not
-- answer busy because another backend jumps at the same moment (the C
-- edition waits for its jump lock: src/token.c).
CREATE FUNCTION @extschema@.dlock_sql_jump(t pg_catalog.int8, last pg_catalog.int8,
	reason pg_catalog.text, OUT token pg_catalog.int8, OUT floor pg_catalog.int8)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $dlock$
DECLARE
	ep @extschema@.dlock_epoch;
	cur record;
	now_us pg_catalog.int8;
	f pg_catalog.int8;
	bound pg_catalog.text;
BEGIN
	BEGIN
		-- This lock is waited for at least 50 ms, whatever shorter bound
		-- the acquire set (1 ms for wait => 0): another jumper holds it for
		-- a few statements only.  Every other lock, the caller's bound.
		bound := pg_catalog.current_setting('lock_timeout');
		IF bound::pg_catalog.interval
		   BETWEEN '1 microsecond'::pg_catalog.interval AND '50 ms'::pg_catalog.interval THEN
			PERFORM pg_catalog.set_config('lock_timeout', '50', true);
		END IF;
		LOCK TABLE @extschema@.dlock_sql_jump IN SHARE UPDATE EXCLUSIVE MODE;
		PERFORM pg_catalog.set_config('lock_timeout', bound, true);
		PERFORM @extschema@.dlock_sql_counter_check();
		SELECT e.* INTO ep FROM @extschema@.dlock_epoch AS e ORDER BY e.floor DESC LIMIT 1;
		cur := @extschema@.dlock_sql_history();
		-- A jump since t was drawn (committed or not: its setval is) may
		-- let a new draw pass.
		IF reason IS NULL THEN
			t := pg_catalog.nextval('@extschema@.dlock_token_seq'::pg_catalog.regclass);
			IF @extschema@.dlock_sql_token_ok(t, last, ep, cur) THEN
				token := t;
				floor := ep.floor;
				RAISE EXCEPTION 'no jump' USING ERRCODE = 'DLKJP';
			END IF;
		END IF;
		reason := coalesce(reason, @extschema@.dlock_sql_jump_reason(t, last, ep, cur));
		now_us := @extschema@.dlock_sql_clock_us();
		f := GREATEST(t, last, now_us,
				(SELECT pg_catalog.max(l.token) FROM @extschema@.dlock_lease AS l),
				ep.floor + 1,
				ep.floor + (now_us -
					pg_catalog.trunc(EXTRACT(epoch FROM ep.jumped_at) * 1000000)::pg_catalog.int8),
				(SELECT s.last_value FROM @extschema@.dlock_token_seq AS s) + 1000000)
			 + 1;
		PERFORM pg_catalog.setval('@extschema@.dlock_token_seq'::pg_catalog.regclass, f, true);
		token := pg_catalog.nextval('@extschema@.dlock_token_seq'::pg_catalog.regclass);
		floor := f;
		RAISE EXCEPTION 'jumped' USING ERRCODE = 'DLKJP';
	EXCEPTION
		WHEN SQLSTATE 'DLKJP' THEN
			NULL;
	END;
	IF f IS NULL THEN
		RETURN;
	END IF;
	-- The clock rule's jumps (about one a second under load) move the row
	-- of the clock jump before them instead of adding one each, unless a
	-- jump still in progress moves it (SKIP LOCKED: never wait for it).
	IF reason = 'clock' AND ep.reason = 'clock' THEN
		PERFORM FROM @extschema@.dlock_epoch AS x WHERE x.floor = ep.floor FOR UPDATE SKIP LOCKED;
		IF FOUND THEN
			UPDATE @extschema@.dlock_epoch AS x SET floor = f, jumped_at = pg_catalog.clock_timestamp()
			 WHERE x.floor = ep.floor;
			RETURN;
		END IF;
	END IF;
	INSERT INTO @extschema@.dlock_epoch
		VALUES (f, cur.system_identifier, cur.timeline, cur.database_oid,
				cur.counter_relfilenode, pg_catalog.clock_timestamp(), reason);
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_jump(pg_catalog.int8, pg_catalog.int8, pg_catalog.text) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_jump(pg_catalog.int8, pg_catalog.int8, pg_catalog.text) IS
	'internal: move the token counter to a new floor above every earlier token and the clock, and record it in dlock_epoch';

-- A new token for a name whose last token is last (0 if none), in the
-- history cur (dlock_sql_history(), which the caller also records).
CREATE FUNCTION @extschema@.dlock_sql_draw(last pg_catalog.int8, cur record)
RETURNS pg_catalog.int8
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $dlock$
DECLARE
	t pg_catalog.int8 := pg_catalog.nextval('@extschema@.dlock_token_seq'::pg_catalog.regclass);
	ep @extschema@.dlock_epoch;
BEGIN
	SELECT e.* INTO ep FROM @extschema@.dlock_epoch AS e ORDER BY e.floor DESC LIMIT 1;
	IF @extschema@.dlock_sql_token_ok(t, last, ep, cur) THEN
		RETURN t;
	END IF;
	RETURN (@extschema@.dlock_sql_jump(t, last, NULL)).token;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_draw(pg_catalog.int8, record) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_draw(pg_catalog.int8, record) IS
	'internal: a new token above every token handed out before and above last (jumps when needed), in the history cur';


-- Make this transaction's commit durable: flushed, and confirmed by the
-- synchronous standbys where there are any (remote_apply stays).  Called by
-- the SECURITY INVOKER API functions after the work: a SET LOCAL made in a
-- function with a SET clause ends with that function.
CREATE FUNCTION @extschema@.dlock_sql_durable()
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $dlock$
BEGIN
	IF pg_catalog.current_setting('synchronous_commit') OPERATOR(pg_catalog.<>) ALL (ARRAY['on', 'remote_apply']) THEN
		PERFORM pg_catalog.set_config('synchronous_commit', 'on', true);
	END IF;
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_durable() IS
	'internal: make the calling transaction commit synchronously (synchronous_commit = on for this transaction unless it is on or remote_apply)';

-- dlock_sql_durable at the call is undone by what the caller does after
-- it: a later SET (LOCAL) synchronous_commit, or the end of a function
-- whose SET clause names synchronous_commit (the clause restores its value
-- on return, SET LOCAL made inside included: guc.c, AtEOXact_GUC).  So the
-- rows that make a token or an expiry (dlock_expiry without released_at,
-- dlock_epoch) also queue a deferred constraint trigger: it fires at
-- COMMIT, after every function has returned and before the commit record
-- is written with the synchronous_commit of that moment (xact.c,
-- CommitTransaction: AfterTriggerFireDeferred, then RecordTransactionCommit),
-- and sets it again: the C edition's pre-commit callback (src/token.c), in
-- SQL.  Only SET CONSTRAINTS ALL IMMEDIATE (or naming these triggers)
-- followed by a SET defeats it: before the acquire it makes the trigger
-- fire at the end of the acquire's statement, after it it fires the trigger
-- at once.  A rolled back (sub)transaction drops the event with the rows.  SECURITY INVOKER, no SET clause: it runs as the role that commits,
-- and its SET LOCAL stays until the commit.
CREATE FUNCTION @extschema@.dlock_sql_durable_commit()
RETURNS trigger
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $dlock$
BEGIN
	IF pg_catalog.current_setting('synchronous_commit') OPERATOR(pg_catalog.<>) ALL (ARRAY['on', 'remote_apply']) THEN
		PERFORM pg_catalog.set_config('synchronous_commit', 'on', true);
	END IF;
	RETURN NULL;
END
$dlock$;
-- A trigger function is not called through EXECUTE: nobody needs it.
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_durable_commit() FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_durable_commit() IS
	'internal: trigger function of dlock_sql_durable: at commit, make the transaction that wrote a token or an expiry commit synchronously';

CREATE CONSTRAINT TRIGGER dlock_sql_durable
	AFTER INSERT OR UPDATE ON @extschema@.dlock_expiry
	DEFERRABLE INITIALLY DEFERRED
	FOR EACH ROW WHEN (NEW.released_at IS NULL)
	EXECUTE FUNCTION @extschema@.dlock_sql_durable_commit();
COMMENT ON TRIGGER dlock_sql_durable ON @extschema@.dlock_expiry IS
	'dlock (SQL edition): a new token or expiry makes the transaction commit synchronously, whatever synchronous_commit is at the call';
CREATE CONSTRAINT TRIGGER dlock_sql_durable
	AFTER INSERT OR UPDATE ON @extschema@.dlock_epoch
	DEFERRABLE INITIALLY DEFERRED
	FOR EACH ROW
	EXECUTE FUNCTION @extschema@.dlock_sql_durable_commit();
COMMENT ON TRIGGER dlock_sql_durable ON @extschema@.dlock_epoch IS
	'dlock (SQL edition): a jump of the token counter makes the transaction commit synchronously, whatever synchronous_commit is at the call';

-- dlock_rebase() and dlock_rebase(at_least): the owner of the tables (the
-- installing role) and superusers only, as the C edition allows superusers
-- and the extension's owner.
CREATE FUNCTION @extschema@.dlock_sql_rebase(at_least pg_catalog.int8)
RETURNS pg_catalog.int8
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $dlock$
DECLARE
	caller pg_catalog.oid := @extschema@.dlock_sql_caller();
BEGIN
	-- The tables' owner, or (trusted extension, pg_tle) the extension's.
	IF NOT pg_catalog.pg_has_role(caller, (SELECT c.relowner FROM pg_catalog.pg_class AS c
										   WHERE c.oid = '@extschema@.dlock_lease'::pg_catalog.regclass),
								  'USAGE')
	   AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend AS d
					   JOIN pg_catalog.pg_extension AS x ON x.oid = d.refobjid
					  WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
						AND d.objid = '@extschema@.dlock_lease'::pg_catalog.regclass
						AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
						AND d.deptype = 'e'
						AND pg_catalog.pg_has_role(caller, x.extowner, 'USAGE')) THEN
		RAISE EXCEPTION 'permission denied to rebase dlock tokens'
			USING ERRCODE = '42501',
				  DETAIL = 'Only superusers and the owner of dlock''s tables may call dlock_rebase().';
	END IF;
	IF at_least IS NULL THEN
		RAISE EXCEPTION 'argument "%" must not be null', 'at_least' USING ERRCODE = '22004';
	ELSIF at_least < 0 THEN
		RAISE EXCEPTION 'argument "%" must not be negative', 'at_least' USING ERRCODE = '22023';
	ELSIF at_least > 4611686018427387904 THEN
		RAISE EXCEPTION 'argument "%" must not be greater than %', 'at_least', 4611686018427387904
			USING ERRCODE = '22023',
				  DETAIL = 'Tokens above it would leave too little room before the token counter reaches its maximum, after which every acquisition fails.';
	END IF;
	PERFORM @extschema@.dlock_sql_writable('dlock_rebase()');
	PERFORM @extschema@.dlock_sql_no_prepare();
	RETURN (@extschema@.dlock_sql_jump(pg_catalog.nextval('@extschema@.dlock_token_seq'::pg_catalog.regclass),
									   at_least, 'rebase')).floor;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_rebase(pg_catalog.int8) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_rebase(pg_catalog.int8) IS
	'internal: the work of dlock_rebase (a jump with reason rebase, above at_least)';

CREATE FUNCTION @extschema@.dlock_rebase()
RETURNS pg_catalog.int8
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $dlock$
DECLARE
	f pg_catalog.int8 := @extschema@.dlock_sql_rebase(0);
BEGIN
	PERFORM @extschema@.dlock_sql_durable();
	RETURN f;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_rebase() FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_rebase() IS
	'make every later token greater than the server clock in microseconds and every token recorded so far; returns the new floor; superusers and the extension owner only';

CREATE FUNCTION @extschema@.dlock_rebase(at_least pg_catalog.int8)
RETURNS pg_catalog.int8
LANGUAGE plpgsql VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER
AS $dlock$
DECLARE
	f pg_catalog.int8 := @extschema@.dlock_sql_rebase(at_least);
BEGIN
	PERFORM @extschema@.dlock_sql_durable();
	RETURN f;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_rebase(pg_catalog.int8) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_rebase(pg_catalog.int8) IS
	'dlock_rebase(), and every later token is also above at_least: raises the token counter, never lowers it; returns the new floor; superusers and the extension owner only';
