-- Copyright (c) 2026, the dlock developers
--
-- 50_events.sql: lease events in the SQL edition, with the C edition's
-- channel and payload (src/events.c, docs/events.md):
--
--	NOTIFY dlock, '{"lock": name, "event": "acquired" | "taken_over" | "released",
--				   "token": n, "owner": owner}'
--
-- ("owner" only when the lease has one), sent when the transaction commits
-- and dropped when it, or the subtransaction that sent it, rolls back.  Off
-- unless dlock_sql_settings.events is true (the GUC dlock.events of the C
-- edition): a notifying commit takes a cluster-wide lock across its flush
-- (async.c, PreCommit_Notify), so notifying commits never group-commit.
-- to_json escapes names as escape_json does; in a SQL_ASCII database the
-- bytes of 0x80 and above are copied as they are (the C edition escapes
-- them as \u00XX: docs/editions.md).

-- The payload, as the C edition's DlockEventSend builds it.
CREATE FUNCTION @extschema@.dlock_sql_event_payload(name pg_catalog.text, event pg_catalog.text,
	token pg_catalog.int8, owner pg_catalog.text)
RETURNS pg_catalog.text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $dlock$
SELECT '{"lock": ' || pg_catalog.to_json(name)::pg_catalog.text
	   || ', "event": "' || event || '", "token": ' || token::pg_catalog.text
	   || coalesce(', "owner": ' || pg_catalog.to_json(owner)::pg_catalog.text, '')
	   || '}'
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_event_payload(pg_catalog.text, pg_catalog.text, pg_catalog.int8, pg_catalog.text) IS
	'internal: the JSON payload of a lease event (the C edition''s format)';

CREATE FUNCTION @extschema@.dlock_sql_event(name pg_catalog.text, event pg_catalog.text,
	token pg_catalog.int8, owner pg_catalog.text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $dlock$
BEGIN
	IF (SELECT s.events FROM @extschema@.dlock_sql_settings AS s) THEN
		PERFORM pg_catalog.pg_notify('dlock', @extschema@.dlock_sql_event_payload($1, $2, $3, $4));
	END IF;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_event(pg_catalog.text, pg_catalog.text, pg_catalog.int8, pg_catalog.text) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_event(pg_catalog.text, pg_catalog.text, pg_catalog.int8, pg_catalog.text) IS
	'internal: NOTIFY dlock with the event''s JSON payload, if dlock_sql_settings.events is on';
