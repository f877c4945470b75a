-- Copyright (c) 2026, the dlock developers
--
-- 65_fenced_tables.sql: the view dlock_fenced_tables and the function of
-- the event trigger dlock_fence_ddl, one text for both editions (issue 24
-- items 7 and 11, issue 26): the SQL edition's script has this file in its
-- place, and make splices it into the C edition's update script
-- (dlock--1.1--1.2.sql, at its "-- @include" line).  They only read the
-- catalogs, and '@extschema@.dlock_fence()' names each edition's trigger
-- function.  CREATE OR REPLACE VIEW keeps the columns of the C edition's
-- 1.1 view and adds not_fencing at the end; GRANT SELECT repeats 1.1's.
--
-- A dlock_fence trigger fences its table only if it fires for every write
-- of an ordinary session: enabled in origin mode or ALWAYS, BEFORE ... FOR
-- EACH ROW (or BEFORE TRUNCATE FOR EACH STATEMENT), with no column list, no
-- WHEN condition and a token column that holds every bigint.  Every other
-- one is listed with the reason, and so is every inheritance descendant of
-- a table with a dlock_fence trigger that has no fencing one of its own
-- (row triggers fire only on the table that holds the row).  A partitioned
-- table fences a write only if every partition under it does (a write
-- through it fires the triggers of the partition that takes the row): its
-- not_fencing names each partition that does not, at any depth.  So does
-- a table with inheritance children for UPDATE and DELETE, which reach
-- the rows of its descendants and fire only their own row triggers
-- (row triggers are not inherited): its update and delete are true only
-- if every descendant, at any depth, fences them, and its not_fencing
-- names each one that does not (an INSERT writes the parent alone).  A
-- TRUNCATE fires only the truncate triggers of the tables it empties: each
-- partition or inheritance child of a table with a fencing truncate
-- trigger needs one of its own, and a partitioned table fences TRUNCATE
-- only if every partition under it, at any depth, has one.
CREATE OR REPLACE VIEW @extschema@.dlock_fenced_tables AS
	WITH RECURSIVE tokcol AS (
		-- tgargs holds each argument followed by a zero byte: the token
		-- column is the second.
		SELECT t.oid AS tgoid, a.attname, a.atttypid, a.atttypid AS typid
		  FROM pg_catalog.pg_trigger AS t
		 CROSS JOIN LATERAL (SELECT pg_catalog.substr(t.tgargs,
							 pg_catalog.position(t.tgargs, pg_catalog.decode('00', 'hex')) OPERATOR(pg_catalog.+) 1) AS rest) AS r
		  JOIN pg_catalog.pg_attribute AS a
			ON a.attrelid OPERATOR(pg_catalog.=) t.tgrelid
		   AND a.attnum OPERATOR(pg_catalog.>) 0
		   AND NOT a.attisdropped
		   AND a.attname::pg_catalog.text OPERATOR(pg_catalog.=) pg_catalog.convert_from(
				   pg_catalog.substr(r.rest, 1,
									 pg_catalog.position(r.rest, pg_catalog.decode('00', 'hex')) OPERATOR(pg_catalog.-) 1),
				   pg_catalog.current_setting('server_encoding')::pg_catalog.name)
		 WHERE t.tgfoid OPERATOR(pg_catalog.=) '@extschema@.dlock_fence()'::pg_catalog.regprocedure
		   AND t.tgnargs OPERATOR(pg_catalog.>=) 2
		   AND (t.tgtype::pg_catalog.int4 OPERATOR(pg_catalog.&) 1) OPERATOR(pg_catalog.=) 1
		UNION
		SELECT k.tgoid, k.attname, k.atttypid, ty.typbasetype
		  FROM tokcol AS k
		  JOIN pg_catalog.pg_type AS ty ON ty.oid OPERATOR(pg_catalog.=) k.typid
		 WHERE ty.typtype OPERATOR(pg_catalog.=) 'd'
	), badtoken AS (
		SELECT k.tgoid,
			   'token column ' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(k.attname::pg_catalog.text)
			   OPERATOR(pg_catalog.||) ': ' OPERATOR(pg_catalog.||) pg_catalog.format_type(k.atttypid, NULL)
			   OPERATOR(pg_catalog.||) ' cannot hold every token' AS reason
		  FROM tokcol AS k
		  JOIN pg_catalog.pg_type AS ty ON ty.oid OPERATOR(pg_catalog.=) k.typid
		 WHERE ty.typtype OPERATOR(pg_catalog.<>) 'd'
		   AND k.typid OPERATOR(pg_catalog.<>) 'pg_catalog.int8'::pg_catalog.regtype
	), trig AS (
		SELECT t.tgrelid, t.tgname, t.tgtype::pg_catalog.int4 AS tgtype,
			   CASE
				 WHEN t.tgenabled OPERATOR(pg_catalog.=) 'D'
				   THEN 'disabled'
				 WHEN t.tgenabled OPERATOR(pg_catalog.=) 'R'
				   THEN 'replica only (ENABLE REPLICA TRIGGER)'
				 WHEN (t.tgtype::pg_catalog.int4 OPERATOR(pg_catalog.&) 67) OPERATOR(pg_catalog.<>) 3
				  AND (t.tgtype::pg_catalog.int4 OPERATOR(pg_catalog.&) 99) OPERATOR(pg_catalog.<>) 34
				   THEN 'not BEFORE FOR EACH ROW, nor BEFORE TRUNCATE'
				 WHEN pg_catalog.cardinality(t.tgattr::pg_catalog.int2[]) OPERATOR(pg_catalog.>) 0
				   THEN 'column list (UPDATE OF)'
				 WHEN t.tgqual IS NOT NULL
				   THEN 'WHEN condition'
				 ELSE (SELECT b.reason FROM badtoken AS b WHERE b.tgoid OPERATOR(pg_catalog.=) t.oid)
			   END AS reason
		  FROM pg_catalog.pg_trigger AS t
		 WHERE t.tgfoid OPERATOR(pg_catalog.=) '@extschema@.dlock_fence()'::pg_catalog.regprocedure
	), descendant AS (
		SELECT i.inhrelid AS relid, i.inhparent AS ancestor
		  FROM pg_catalog.pg_inherits AS i
		 WHERE i.inhparent IN (SELECT trig.tgrelid FROM trig)
		UNION
		SELECT i.inhrelid, d.ancestor
		  FROM pg_catalog.pg_inherits AS i
		  JOIN descendant AS d ON i.inhparent OPERATOR(pg_catalog.=) d.relid
	), unfenced_child AS (
		SELECT d.relid,
			   CASE WHEN c.relispartition
					THEN 'partition of ' OPERATOR(pg_catalog.||)
						 (SELECT i.inhparent::pg_catalog.regclass::pg_catalog.text FROM pg_catalog.pg_inherits AS i
						   WHERE i.inhrelid OPERATOR(pg_catalog.=) d.relid)
						 OPERATOR(pg_catalog.||) ', without a fencing trigger'
					ELSE 'inheritance child of ' OPERATOR(pg_catalog.||)
						 pg_catalog.min(d.ancestor::pg_catalog.regclass::pg_catalog.text) OPERATOR(pg_catalog.||)
						 ', without a fencing trigger of its own'
			   END AS reason
		  FROM descendant AS d
		  JOIN pg_catalog.pg_class AS c ON c.oid OPERATOR(pg_catalog.=) d.relid
		 WHERE d.relid NOT IN (SELECT trig.tgrelid FROM trig WHERE trig.reason IS NULL)
		 GROUP BY d.relid, c.relispartition
	), untruncated AS (
		-- A TRUNCATE fires the truncate triggers of the tables it empties
		-- only (tablecmds.c, ExecuteTruncateGuts), never an ancestor's: a
		-- TRUNCATE of a partition or an inheritance child passes a fencing
		-- truncate trigger of its ancestors.  Each such descendant that has
		-- no fencing truncate trigger of its own.
		SELECT d.relid,
			   'no fencing truncate trigger of its own (a TRUNCATE of it does not fire those of '
			   OPERATOR(pg_catalog.||) pg_catalog.string_agg(DISTINCT d.ancestor::pg_catalog.regclass::pg_catalog.text, ', '
															 ORDER BY d.ancestor::pg_catalog.regclass::pg_catalog.text)
			   OPERATOR(pg_catalog.||) ')' AS reason
		  FROM descendant AS d
		 WHERE d.ancestor IN (SELECT trig.tgrelid FROM trig
							   WHERE trig.reason IS NULL AND (trig.tgtype OPERATOR(pg_catalog.&) 35) OPERATOR(pg_catalog.=) 34)
		   AND d.relid NOT IN (SELECT trig.tgrelid FROM trig
								WHERE trig.reason IS NULL AND (trig.tgtype OPERATOR(pg_catalog.&) 35) OPERATOR(pg_catalog.=) 34)
		 GROUP BY d.relid
	), rel AS (
		SELECT trig.tgrelid AS relid FROM trig
		UNION
		SELECT unfenced_child.relid FROM unfenced_child
	), own AS (
		SELECT r.relid,
			   COALESCE(pg_catalog.bool_or((t.tgtype OPERATOR(pg_catalog.&) 7) OPERATOR(pg_catalog.=) 7) FILTER (WHERE t.reason IS NULL), false) AS ins,
			   COALESCE(pg_catalog.bool_or((t.tgtype OPERATOR(pg_catalog.&) 19) OPERATOR(pg_catalog.=) 19) FILTER (WHERE t.reason IS NULL), false) AS upd,
			   COALESCE(pg_catalog.bool_or((t.tgtype OPERATOR(pg_catalog.&) 11) OPERATOR(pg_catalog.=) 11) FILTER (WHERE t.reason IS NULL), false) AS del,
			   COALESCE(pg_catalog.bool_or((t.tgtype OPERATOR(pg_catalog.&) 35) OPERATOR(pg_catalog.=) 34) FILTER (WHERE t.reason IS NULL), false) AS trunc,
			   COALESCE(pg_catalog.array_agg(t.tgname ORDER BY t.tgname) FILTER (WHERE t.tgname IS NOT NULL AND t.reason IS NULL), '{}'::pg_catalog.name[]) AS triggers,
			   pg_catalog.array_cat(pg_catalog.array_cat(
				   COALESCE(pg_catalog.array_agg((t.tgname::pg_catalog.text OPERATOR(pg_catalog.||) ': ' OPERATOR(pg_catalog.||) t.reason) ORDER BY t.tgname) FILTER (WHERE t.reason IS NOT NULL), '{}'::pg_catalog.text[]),
				   (SELECT pg_catalog.array_agg(u.reason) FROM unfenced_child AS u WHERE u.relid OPERATOR(pg_catalog.=) r.relid)),
				   (SELECT pg_catalog.array_agg(u.reason) FROM untruncated AS u WHERE u.relid OPERATOR(pg_catalog.=) r.relid)) AS not_fencing,
			   pg_catalog.array_agg((t.tgname::pg_catalog.text OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) t.reason) ORDER BY t.tgname) FILTER (WHERE t.reason IS NOT NULL) AS bad
		  FROM rel AS r
		  LEFT JOIN trig AS t ON t.tgrelid OPERATOR(pg_catalog.=) r.relid
		 GROUP BY r.relid
	), part AS (
		-- Each partition, at any depth, of a partitioned table in the view,
		-- and each inheritance descendant, at any depth, of any other table
		-- in it: an UPDATE or a DELETE of the parent reaches the rows of
		-- its descendants and fires only their row triggers (an INSERT
		-- writes the parent alone, and a TRUNCATE of it fires its own
		-- truncate triggers).  kind names it in not_fencing.
		SELECT d.ancestor, o.*, c.relkind,
			   CASE WHEN c.relispartition THEN 'partition ' ELSE 'inheritance child ' END AS kind
		  FROM descendant AS d
		  JOIN pg_catalog.pg_class AS c ON c.oid OPERATOR(pg_catalog.=) d.relid
		  JOIN own AS o ON o.relid OPERATOR(pg_catalog.=) d.relid
		 WHERE c.relispartition OPERATOR(pg_catalog.=)
			   ((SELECT a.relkind FROM pg_catalog.pg_class AS a WHERE a.oid OPERATOR(pg_catalog.=) d.ancestor) OPERATOR(pg_catalog.=) 'p')
	)
	SELECT o.relid::pg_catalog.regclass AS "table",
		   o.ins AND COALESCE(pg_catalog.bool_and(p.ins) FILTER (WHERE p.relkind OPERATOR(pg_catalog.<>) 'p'
																AND p.kind OPERATOR(pg_catalog.=) 'partition '), true) AS "insert",
		   o.upd AND COALESCE(pg_catalog.bool_and(p.upd) FILTER (WHERE p.relkind OPERATOR(pg_catalog.<>) 'p'), true) AS "update",
		   o.del AND COALESCE(pg_catalog.bool_and(p.del) FILTER (WHERE p.relkind OPERATOR(pg_catalog.<>) 'p'), true) AS "delete",
		   o.trunc AND COALESCE(pg_catalog.bool_and(p.trunc) FILTER (WHERE p.kind OPERATOR(pg_catalog.=) 'partition '), true) AS "truncate",
		   o.triggers,
		   o.not_fencing OPERATOR(pg_catalog.||) COALESCE((
			   SELECT pg_catalog.array_agg(x.reason ORDER BY x.partition, x.reason)
				 FROM (SELECT q.relid::pg_catalog.regclass::pg_catalog.text AS partition,
							  q.kind OPERATOR(pg_catalog.||) q.relid::pg_catalog.regclass::pg_catalog.text
							  OPERATOR(pg_catalog.||) ': ' OPERATOR(pg_catalog.||) b.b AS reason
						 FROM part AS q CROSS JOIN LATERAL pg_catalog.unnest(q.bad) AS b(b)
						WHERE q.ancestor OPERATOR(pg_catalog.=) o.relid
						  AND (q.kind OPERATOR(pg_catalog.=) 'partition ' OR o.upd OR o.del)
					   UNION ALL
					   SELECT q.relid::pg_catalog.regclass::pg_catalog.text,
							  q.kind OPERATOR(pg_catalog.||) q.relid::pg_catalog.regclass::pg_catalog.text
							  OPERATOR(pg_catalog.||) ': no fencing trigger'
						 FROM part AS q
						WHERE q.ancestor OPERATOR(pg_catalog.=) o.relid AND q.bad IS NULL
						  AND q.relkind OPERATOR(pg_catalog.<>) 'p' AND q.triggers OPERATOR(pg_catalog.=) '{}'
						  AND (q.kind OPERATOR(pg_catalog.=) 'partition ' OR o.upd OR o.del)
					   UNION ALL
					   -- an inheritance child whose own fencing triggers leave
					   -- out UPDATE or DELETE, which the parent fences
					   SELECT q.relid::pg_catalog.regclass::pg_catalog.text,
							  q.kind OPERATOR(pg_catalog.||) q.relid::pg_catalog.regclass::pg_catalog.text
							  OPERATOR(pg_catalog.||) ': no fencing trigger for '
							  OPERATOR(pg_catalog.||) CASE WHEN NOT (o.del AND NOT q.del) THEN 'UPDATE'
														   WHEN NOT (o.upd AND NOT q.upd) THEN 'DELETE'
														   ELSE 'UPDATE and DELETE' END
						 FROM part AS q
						WHERE q.ancestor OPERATOR(pg_catalog.=) o.relid AND q.kind OPERATOR(pg_catalog.=) 'inheritance child '
						  AND q.triggers OPERATOR(pg_catalog.<>) '{}'
						  AND ((o.upd AND NOT q.upd) OR (o.del AND NOT q.del))
					   UNION ALL
					   SELECT q.relid::pg_catalog.regclass::pg_catalog.text,
							  'partition ' OPERATOR(pg_catalog.||) q.relid::pg_catalog.regclass::pg_catalog.text
							  OPERATOR(pg_catalog.||) ': no fencing truncate trigger'
						 FROM part AS q
						WHERE q.ancestor OPERATOR(pg_catalog.=) o.relid AND q.kind OPERATOR(pg_catalog.=) 'partition '
						  AND o.trunc AND NOT q.trunc) AS x),
			   '{}'::pg_catalog.text[]) AS not_fencing
	  FROM own AS o
	  LEFT JOIN part AS p ON p.ancestor OPERATOR(pg_catalog.=) o.relid
	 GROUP BY o.relid, o.ins, o.upd, o.del, o.trunc, o.triggers, o.not_fencing;
COMMENT ON VIEW @extschema@.dlock_fenced_tables IS
	'every table with a dlock_fence trigger or an inheritance ancestor that has one, which writes its fencing triggers fence (for a partitioned table: those that every partition under it fences; for an inheritance parent, UPDATE and DELETE only if every descendant fences them), and why any other does not fence';
COMMENT ON COLUMN @extschema@.dlock_fenced_tables."table" IS 'the table (a partition has triggers of its own, cloned from its parent; an inheritance child needs its own)';
COMMENT ON COLUMN @extschema@.dlock_fenced_tables."insert" IS 'a fencing BEFORE INSERT row trigger fences INSERT, COPY FROM and the insert of an upsert or MERGE';
COMMENT ON COLUMN @extschema@.dlock_fenced_tables."update" IS 'a fencing BEFORE UPDATE row trigger fences UPDATE, ON CONFLICT DO UPDATE and MERGE ... THEN UPDATE; for a partitioned table or an inheritance parent, only if every partition or inheritance descendant under it fences UPDATE too (an UPDATE of the parent reaches their rows and fires only their row triggers)';
COMMENT ON COLUMN @extschema@.dlock_fenced_tables."delete" IS 'a fencing BEFORE DELETE row trigger fences DELETE and MERGE ... THEN DELETE; false for triggers created the 1.0 way; for a partitioned table or an inheritance parent, only if every partition or inheritance descendant under it fences DELETE too';
COMMENT ON COLUMN @extschema@.dlock_fenced_tables."truncate" IS 'a fencing BEFORE TRUNCATE statement trigger fences TRUNCATE; for a partitioned table, only if every partition under it has one of its own too (a TRUNCATE of a partition fires only its own triggers)';
COMMENT ON COLUMN @extschema@.dlock_fenced_tables.triggers IS 'the fencing dlock_fence triggers of the table: enabled in origin mode or ALWAYS, with no column list and no WHEN condition';
COMMENT ON COLUMN @extschema@.dlock_fenced_tables.not_fencing IS 'each dlock_fence trigger of the table that fences nothing, as "trigger: reason" (disabled, replica only, not BEFORE, column list, WHEN condition, a token column that cannot hold every token); for an inheritance child or a partition with no fencing trigger, that reason; for a partitioned table, each partition under it that does not fence, as "partition p: trigger reason", and for a table with inheritance children each descendant that does not fence UPDATE or DELETE, as "inheritance child c: reason"; for a partition or inheritance child of a table with a fencing truncate trigger, none of its own, as "no fencing truncate trigger of its own (...)", and for its partitioned ancestors "partition p: no fencing truncate trigger"; empty if none';
GRANT SELECT ON @extschema@.dlock_fenced_tables TO PUBLIC;

-- The event trigger: a WARNING for DDL that makes a dlock_fence trigger
-- that does not fence.  PL/pgSQL, so that DDL never needs the dlock
-- library: it only reads the catalogs and raises no error of its own.
-- CREATE TRIGGER and CREATE TABLE ... INHERITS are told by the object
-- created.  ALTER TABLE has no parse tree here: the triggers it enabled or
-- disabled, the parents it added and the partitions it attached are the
-- dlock_fence rows of pg_trigger and the pg_inherits rows of the table (or
-- of its partitions) written by the current transaction, whose xmin is one
-- of the transaction ids this backend holds a lock on (its top transaction
-- and its subtransactions).  DISABLE TRIGGER warns although pg_restore
-- --disable-triggers runs it: a data-only restore enables the triggers
-- again, and a fence left disabled by hand is what the warning is for.
CREATE FUNCTION @extschema@.dlock_fence_ddl()
RETURNS event_trigger
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $dlock$
DECLARE
	fence CONSTANT pg_catalog.oid := '@extschema@.dlock_fence()'::pg_catalog.regprocedure;
	cmd record;
	t record;
	rel pg_catalog.oid;
	ours pg_catalog.xid[];
	fences pg_catalog.bool;
BEGIN
	FOR cmd IN
		SELECT e.command_tag, e.objid
		  FROM pg_catalog.pg_event_trigger_ddl_commands() AS e
		 WHERE (e.command_tag OPERATOR(pg_catalog.=) 'CREATE TRIGGER' AND e.object_type OPERATOR(pg_catalog.=) 'trigger')
			OR (e.command_tag OPERATOR(pg_catalog.=) ANY ('{ALTER TABLE,CREATE TABLE}') AND e.object_type OPERATOR(pg_catalog.=) 'table')
	LOOP
		-- Cheap for DDL that touches no dlock_fence trigger: index lookups.
		IF cmd.command_tag OPERATOR(pg_catalog.=) 'CREATE TRIGGER' THEN
			SELECT tr.tgrelid INTO rel FROM pg_catalog.pg_trigger AS tr
			 WHERE tr.oid OPERATOR(pg_catalog.=) cmd.objid AND tr.tgfoid OPERATOR(pg_catalog.=) fence;
			CONTINUE WHEN rel IS NULL;
		ELSE
			rel := cmd.objid;
			-- (a partition has no inheritance parents of its own)
			CONTINUE WHEN NOT ((cmd.command_tag OPERATOR(pg_catalog.=) 'ALTER TABLE'
								AND EXISTS (SELECT FROM pg_catalog.pg_trigger AS tr
											 WHERE tr.tgrelid OPERATOR(pg_catalog.=) rel AND tr.tgfoid OPERATOR(pg_catalog.=) fence))
							   OR (EXISTS (SELECT FROM pg_catalog.pg_inherits AS i WHERE i.inhrelid OPERATOR(pg_catalog.=) rel)
								   AND NOT (SELECT c.relispartition FROM pg_catalog.pg_class AS c WHERE c.oid OPERATOR(pg_catalog.=) rel))
							   -- a new partition under a dlock_fence trigger (its truncate trigger, below)
							   OR (cmd.command_tag OPERATOR(pg_catalog.=) 'CREATE TABLE'
								   AND EXISTS (SELECT FROM pg_catalog.pg_partition_ancestors(rel) AS a
												 JOIN pg_catalog.pg_trigger AS tr ON tr.tgrelid OPERATOR(pg_catalog.=) a.relid
												WHERE a.relid OPERATOR(pg_catalog.<>) rel AND tr.tgfoid OPERATOR(pg_catalog.=) fence)));
			IF ours IS NULL AND cmd.command_tag OPERATOR(pg_catalog.=) 'ALTER TABLE' THEN
				SELECT COALESCE(pg_catalog.array_agg(l.transactionid), '{}') INTO ours
				  FROM pg_catalog.pg_locks AS l
				 WHERE l.locktype OPERATOR(pg_catalog.=) 'transactionid' AND l.granted
				   AND l.mode OPERATOR(pg_catalog.=) 'ExclusiveLock'
				   AND l.pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid();
			END IF;
		END IF;

		-- The dlock_fence triggers the command made or enabled, by name.
		fences := false;
		FOR t IN
			SELECT tr.tgname, c.relname, tr.tgenabled, tr.tgtype::pg_catalog.int4 AS tgtype,
				   pg_catalog.cardinality(tr.tgattr::pg_catalog.int2[]) AS nattr, tr.tgqual IS NOT NULL AS qual
			  FROM pg_catalog.pg_trigger AS tr
			  JOIN pg_catalog.pg_class AS c ON c.oid OPERATOR(pg_catalog.=) tr.tgrelid
			 WHERE cmd.command_tag OPERATOR(pg_catalog.<>) 'CREATE TABLE'
			   AND tr.tgrelid OPERATOR(pg_catalog.=) rel AND tr.tgfoid OPERATOR(pg_catalog.=) fence
			   AND CASE WHEN cmd.command_tag OPERATOR(pg_catalog.=) 'CREATE TRIGGER'
						THEN tr.oid OPERATOR(pg_catalog.=) cmd.objid
						ELSE tr.tgenabled OPERATOR(pg_catalog.<>) 'D' AND tr.xmin OPERATOR(pg_catalog.=) ANY (ours) END
			 ORDER BY tr.tgname
		LOOP
			IF t.tgenabled OPERATOR(pg_catalog.=) 'R' THEN
				RAISE WARNING 'trigger "%" on relation "%" does not fence it', t.tgname, t.relname
					USING ERRCODE = '01000',
						  DETAIL = 'A trigger enabled for replicas only fires only where session_replication_role is replica.',
						  HINT = pg_catalog.format('Enable trigger "%s" in origin mode with ALTER TABLE ... ENABLE TRIGGER.', t.tgname);
			END IF;
			IF t.tgenabled OPERATOR(pg_catalog.=) 'A' THEN
				RAISE WARNING 'trigger "%" on relation "%" also fires in logical replication apply workers', t.tgname, t.relname
					USING ERRCODE = '01000',
						  DETAIL = 'An apply worker declares no tokens: the first replicated write to the table fails with SQLSTATE LK001 and stops the subscription.',
						  HINT = pg_catalog.format('Enable trigger "%s" in origin mode with ALTER TABLE ... ENABLE TRIGGER.', t.tgname);
			END IF;
			-- BEFORE (66 = BEFORE | INSTEAD) and ROW (1), or TRUNCATE (32) alone.
			IF NOT ((t.tgtype OPERATOR(pg_catalog.&) 66) OPERATOR(pg_catalog.=) 2
					AND ((t.tgtype OPERATOR(pg_catalog.&) 1) OPERATOR(pg_catalog.=) 1
						 OR (t.tgtype OPERATOR(pg_catalog.&) 60) OPERATOR(pg_catalog.=) 32)) THEN
				RAISE WARNING 'trigger "%" on relation "%" does not fence it', t.tgname, t.relname
					USING ERRCODE = '01000',
						  DETAIL = 'Function dlock_fence refuses a trigger that is not BEFORE ... FOR EACH ROW, nor BEFORE TRUNCATE ... FOR EACH STATEMENT.',
						  HINT = 'Re-create the trigger BEFORE INSERT OR UPDATE OR DELETE ... FOR EACH ROW, or BEFORE TRUNCATE ... FOR EACH STATEMENT.';
			END IF;
			IF t.nattr OPERATOR(pg_catalog.>) 0 THEN
				RAISE WARNING 'trigger "%" on relation "%" does not fence it', t.tgname, t.relname
					USING ERRCODE = '01000',
						  DETAIL = 'The trigger has a column list: function dlock_fence refuses it when it fires, and an UPDATE that sets none of the listed columns is not fenced.',
						  HINT = 'Re-create the trigger BEFORE INSERT OR UPDATE OR DELETE, without OF.';
			END IF;
			IF t.qual THEN
				RAISE WARNING 'trigger "%" on relation "%" does not fence it', t.tgname, t.relname
					USING ERRCODE = '01000',
						  DETAIL = 'The trigger has a WHEN condition: function dlock_fence refuses it when it fires, and a write for which the condition is not true is not fenced.',
						  HINT = 'Re-create the trigger without WHEN.';
			END IF;
			fences := fences OR (t.tgenabled OPERATOR(pg_catalog.=) ANY ('{O,A}') AND t.nattr OPERATOR(pg_catalog.=) 0
								 AND NOT t.qual AND (t.tgtype OPERATOR(pg_catalog.&) 67) OPERATOR(pg_catalog.=) 3);
		END LOOP;

		-- A fencing one: every inheritance descendant without a fencing
		-- trigger of its own (partitions get clones of their parent's).
		-- Or the table is a new inheritance child: each parent that a
		-- fencing trigger fences while the table has none of its own.
		FOR t IN
			WITH RECURSIVE fenced AS (
				SELECT tr.tgrelid AS relid
				  FROM pg_catalog.pg_trigger AS tr
				 WHERE tr.tgfoid OPERATOR(pg_catalog.=) fence
				   AND tr.tgenabled OPERATOR(pg_catalog.=) ANY ('{O,A}')
				   AND pg_catalog.cardinality(tr.tgattr::pg_catalog.int2[]) OPERATOR(pg_catalog.=) 0
				   AND tr.tgqual IS NULL
				   AND (tr.tgtype::pg_catalog.int4 OPERATOR(pg_catalog.&) 67) OPERATOR(pg_catalog.=) 3
			), descendant AS (
				SELECT i.inhrelid AS relid, ARRAY[i.inhrelid] AS path
				  FROM pg_catalog.pg_inherits AS i
				 WHERE fences AND i.inhparent OPERATOR(pg_catalog.=) rel
				   AND (SELECT c.relkind FROM pg_catalog.pg_class AS c WHERE c.oid OPERATOR(pg_catalog.=) rel) OPERATOR(pg_catalog.<>) 'p'
				UNION ALL
				SELECT i.inhrelid, d.path OPERATOR(pg_catalog.||) i.inhrelid
				  FROM pg_catalog.pg_inherits AS i
				  JOIN descendant AS d ON i.inhparent OPERATOR(pg_catalog.=) d.relid
				 WHERE i.inhrelid OPERATOR(pg_catalog.<>) ALL (d.path)
			), pair AS (
				(SELECT DISTINCT ON (d.relid) d.relid AS child, rel AS parent,
					   pg_catalog.cardinality(d.path) AS depth, d.path::pg_catalog.int8[] AS ord
				  FROM descendant AS d
				 WHERE d.relid NOT IN (SELECT fenced.relid FROM fenced)
				 ORDER BY d.relid, pg_catalog.cardinality(d.path), d.path::pg_catalog.int8[])
				UNION ALL
				SELECT rel, i.inhparent, 0, ARRAY[i.inhseqno]::pg_catalog.int8[]
				  FROM pg_catalog.pg_inherits AS i
				 WHERE cmd.command_tag OPERATOR(pg_catalog.<>) 'CREATE TRIGGER'
				   AND i.inhrelid OPERATOR(pg_catalog.=) rel
				   AND (cmd.command_tag OPERATOR(pg_catalog.=) 'CREATE TABLE' OR i.xmin OPERATOR(pg_catalog.=) ANY (ours))
				   AND i.inhparent IN (SELECT fenced.relid FROM fenced)
				   AND rel NOT IN (SELECT fenced.relid FROM fenced)
				   AND NOT (SELECT c.relispartition FROM pg_catalog.pg_class AS c WHERE c.oid OPERATOR(pg_catalog.=) rel)
			)
			SELECT ch.relname AS child, pa.relname AS parent
			  FROM pair
			  JOIN pg_catalog.pg_class AS ch ON ch.oid OPERATOR(pg_catalog.=) pair.child
			  JOIN pg_catalog.pg_class AS pa ON pa.oid OPERATOR(pg_catalog.=) pair.parent
			 ORDER BY pair.depth, pair.ord
		LOOP
			RAISE WARNING 'table "%" inherits from "%", whose dlock_fence trigger does not fence it', t.child, t.parent
				USING ERRCODE = '01000',
					  DETAIL = pg_catalog.format('Row triggers fire only on the table that holds the row, so an UPDATE or DELETE of "%s" does not fence the rows of "%s".', t.parent, t.child),
					  HINT = pg_catalog.format('Create a dlock_fence trigger on table "%s" too.', t.child);
		END LOOP;

		-- A TRUNCATE fires only the truncate triggers of the tables it
		-- empties (the view's untruncated): a fencing truncate trigger made
		-- on a table with partitions or inheritance children, or a new
		-- partition or child under one (CREATE TABLE, ALTER TABLE ...
		-- INHERIT; ATTACH PARTITION warns below, with the view's reasons),
		-- warns for each of them that has none of its own.
		FOR t IN
			WITH RECURSIVE truncfence AS (
				SELECT tr.oid, tr.tgrelid AS relid, tr.tgname
				  FROM pg_catalog.pg_trigger AS tr
				 WHERE tr.tgfoid OPERATOR(pg_catalog.=) fence
				   AND tr.tgenabled OPERATOR(pg_catalog.=) ANY ('{O,A}') AND tr.tgqual IS NULL
				   AND (tr.tgtype::pg_catalog.int4 OPERATOR(pg_catalog.&) 99) OPERATOR(pg_catalog.=) 34
			), target AS (
				SELECT rel AS relid, ARRAY[rel] AS path
				 WHERE (cmd.command_tag OPERATOR(pg_catalog.=) 'CREATE TRIGGER'
						AND cmd.objid IN (SELECT truncfence.oid FROM truncfence))
					OR cmd.command_tag OPERATOR(pg_catalog.=) 'CREATE TABLE'
					OR (cmd.command_tag OPERATOR(pg_catalog.=) 'ALTER TABLE'
						AND NOT (SELECT c.relispartition FROM pg_catalog.pg_class AS c WHERE c.oid OPERATOR(pg_catalog.=) rel)
						AND EXISTS (SELECT FROM pg_catalog.pg_inherits AS i
									 WHERE i.inhrelid OPERATOR(pg_catalog.=) rel AND i.xmin OPERATOR(pg_catalog.=) ANY (ours)))
				UNION ALL
				SELECT i.inhrelid, g.path OPERATOR(pg_catalog.||) i.inhrelid
				  FROM pg_catalog.pg_inherits AS i
				  JOIN target AS g ON i.inhparent OPERATOR(pg_catalog.=) g.relid
				 WHERE i.inhrelid OPERATOR(pg_catalog.<>) ALL (g.path)
			), up AS (
				SELECT g.relid AS child, i.inhparent AS ancestor, 1 AS depth, ARRAY[g.relid, i.inhparent] AS path
				  FROM (SELECT DISTINCT target.relid FROM target) AS g
				  JOIN pg_catalog.pg_inherits AS i ON i.inhrelid OPERATOR(pg_catalog.=) g.relid
				 WHERE g.relid NOT IN (SELECT truncfence.relid FROM truncfence)
				UNION ALL
				SELECT u.child, i.inhparent, u.depth OPERATOR(pg_catalog.+) 1, u.path OPERATOR(pg_catalog.||) i.inhparent
				  FROM up AS u
				  JOIN pg_catalog.pg_inherits AS i ON i.inhrelid OPERATOR(pg_catalog.=) u.ancestor
				 WHERE i.inhparent OPERATOR(pg_catalog.<>) ALL (u.path)
			)
			SELECT w.child, w.parent, w.tgname
			  FROM (SELECT DISTINCT ON (u.child) ch.relname AS child, pa.relname AS parent, f.tgname
					  FROM up AS u
					  JOIN truncfence AS f ON f.relid OPERATOR(pg_catalog.=) u.ancestor
					  JOIN pg_catalog.pg_class AS ch ON ch.oid OPERATOR(pg_catalog.=) u.child
					  JOIN pg_catalog.pg_class AS pa ON pa.oid OPERATOR(pg_catalog.=) u.ancestor
					 ORDER BY u.child, u.depth, f.tgname) AS w
			 ORDER BY w.child
		LOOP
			RAISE WARNING 'table "%" is not fenced against TRUNCATE by trigger "%" on relation "%"', t.child, t.tgname, t.parent
				USING ERRCODE = '01000',
					  DETAIL = 'A TRUNCATE of a partition or an inheritance child fires only its own triggers, not those of its ancestors.',
					  HINT = pg_catalog.format('Create a BEFORE TRUNCATE trigger with dlock_fence on table "%s" too.', t.child);
		END LOOP;

		CONTINUE WHEN cmd.command_tag OPERATOR(pg_catalog.<>) 'ALTER TABLE';
		-- DISABLE TRIGGER (by name, ALL or USER) of a dlock_fence trigger of
		-- the table or, recursing, of its partitions.  pg_restore
		-- --disable-triggers does it too, and enables them again.
		FOR t IN
			SELECT tr.tgname, c.relname
			  FROM pg_catalog.pg_trigger AS tr
			  JOIN pg_catalog.pg_class AS c ON c.oid OPERATOR(pg_catalog.=) tr.tgrelid
			 WHERE tr.tgfoid OPERATOR(pg_catalog.=) fence
			   AND tr.tgenabled OPERATOR(pg_catalog.=) 'D'
			   AND tr.xmin OPERATOR(pg_catalog.=) ANY (ours)
			   AND (tr.tgrelid OPERATOR(pg_catalog.=) rel
					OR tr.tgrelid IN (SELECT p.relid FROM pg_catalog.pg_partition_tree(rel) AS p))
			 ORDER BY c.relname, tr.tgname
		LOOP
			RAISE WARNING 'trigger "%" on relation "%" does not fence it', t.tgname, t.relname
				USING ERRCODE = '01000',
					  DETAIL = 'The trigger is disabled: no write to the table is fenced until it is enabled again.',
					  HINT = pg_catalog.format('Enable trigger "%s" with ALTER TABLE ... ENABLE TRIGGER.', t.tgname);
		END LOOP;
		-- ATTACH PARTITION of a partition that its clones do not fence.
		FOR t IN
			SELECT ch.relname AS child, pa.relname AS parent, f.not_fencing
			  FROM pg_catalog.pg_inherits AS i
			  JOIN pg_catalog.pg_class AS ch ON ch.oid OPERATOR(pg_catalog.=) i.inhrelid AND ch.relispartition
			  JOIN pg_catalog.pg_class AS pa ON pa.oid OPERATOR(pg_catalog.=) i.inhparent
			  JOIN @extschema@.dlock_fenced_tables AS f ON f."table" OPERATOR(pg_catalog.=) i.inhrelid::pg_catalog.regclass
			 WHERE i.inhparent OPERATOR(pg_catalog.=) rel
			   AND i.xmin OPERATOR(pg_catalog.=) ANY (ours)
			   AND pg_catalog.cardinality(f.not_fencing) OPERATOR(pg_catalog.>) 0
			 ORDER BY ch.relname
		LOOP
			RAISE WARNING 'partition "%" of "%" is not fenced', t.child, t.parent
				USING ERRCODE = '01000',
					  DETAIL = pg_catalog.format('Column not_fencing of view dlock_fenced_tables says "%s".', pg_catalog.array_to_string(t.not_fencing, '; ')),
					  HINT = 'Make each dlock_fence trigger of the partition fence it (see the view dlock_fenced_tables).';
		END LOOP;
	END LOOP;
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_fence_ddl() IS
	'event trigger: a WARNING when CREATE TRIGGER, ALTER TABLE ... ENABLE [REPLICA | ALWAYS] | DISABLE TRIGGER, CREATE TABLE ... INHERITS, ALTER TABLE ... INHERIT or ALTER TABLE ... ATTACH PARTITION leaves a dlock_fence trigger that does not fence its table, or a partition or inheritance child that a TRUNCATE of it would not fence';
