#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/bench/sql_instructions.sh: what the SQL edition's check path costs,
# in instructions per transaction (callgrind), which the load of a shared
# machine does not move (test/bench/sql_fence.sh measures the same in
# transactions per second).  The cluster of callgrind.sh is set up through
# a short-lived server (the edition's script needs psql), as an ordinary
# role dlock_sql_admin that installs the edition into public and owns the
# tables; then each statement below runs in postgres --single under
# callgrind as that role, one transaction per line, 200 and 1,200 times
# (startup taken out):
#   plain    UPDATE plain SET v = v + 1 WHERE id = ...
#   select1  SELECT 1; UPDATE plain ...            (a second statement)
#   assert   SELECT dlock_assert(...); UPDATE plain ...
#   fenced   SELECT dlock_assert(...); UPDATE fenced ... (through dlock_fence)
#   check    UPDATE plain ... AND dlock_check(...)
#   busy     SELECT dlock_acquire('held', '1 min')  (held by another session)
#   pair     SELECT dlock_release(n, dlock_acquire(n, '1 min')): the acquire
#            path, one of 10^3 free names (one transaction here; two in
#            sql_edition.sh's durable pairs)
#   hand     the hand-written SQL lease of sql_edition.sh: its INSERT ... ON
#            CONFLICT DO UPDATE and its releasing UPDATE
#   advisory pg_try_advisory_lock + pg_advisory_unlock of a free key
#   busyfloor the least a busy answer of this design does: one SECURITY
#            DEFINER PL/pgSQL function (SET search_path) whose one
#            statement reads the expiry row; busynoset the same without
#            the SET clause (which a SECURITY DEFINER function must have)
#   pairfloor the least a pair of this design does: hand's two statements,
#            each in a SECURITY DEFINER PL/pgSQL function (SET search_path),
#            as SELECT floor_release(n, floor_acquire(n))
#   static   SELECT 1; UPDATE static ... (a PL/pgSQL BEFORE UPDATE trigger
#            that reads NEW.token and OLD.token by name: t := NEW.token)
#   floor    SELECT floor_check(...); UPDATE floor ...: the least a fence
#            of this design can do in PL/pgSQL: a SECURITY DEFINER function
#            whose one statement reads the lease and expiry rows and takes
#            the FOR SHARE lock, called by the declaration and again by a
#            BEFORE UPDATE trigger that reads the row's token by name
#            (row_to_json); no argument, role, configuration or prepare
#            checks, no declaration setting
#
# Usage: PG_CONFIG=... bash test/bench/sql_instructions.sh; DLOCK_SQL_SCRIPT
# as in sql_fence.sh (default: src/sql/[0-9]*.sql concatenated).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
. "$(dirname "$0")/callgrind.sh"
if [ -n "${DLOCK_SQL_SCRIPT:-}" ]; then
	cat "$DLOCK_SQL_SCRIPT"
else
	cat "$top"/src/sql/[0-9]*.sql
fi | sed 's/@extschema@/public/g' >"$work/edition.sql"
chmod 644 "$work/edition.sql"
"${as[@]}" "$bindir/pg_ctl" -D "$work/data" -o "-c listen_addresses= -c unix_socket_directories=$work -c port=5432 -c fsync=off" \
	-l "$work/server.log" -w start >/dev/null || { cat "$work/server.log" >&2; exit 1; }
"${as[@]}" "$bindir/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$work" -p 5432 -d postgres >"$work/setup.log" 2>&1 <<SETUP
SET client_min_messages = warning;
CREATE ROLE dlock_sql_admin;
GRANT CREATE ON SCHEMA public TO dlock_sql_admin;
SET ROLE dlock_sql_admin;
\i $work/edition.sql
CREATE TABLE fenced (id int PRIMARY KEY, v int NOT NULL, token bigint);
CREATE TRIGGER fenced_fence BEFORE INSERT OR UPDATE OR DELETE ON fenced
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('bench', 'token');
CREATE TABLE plain (id int PRIMARY KEY, v int NOT NULL, token bigint);
CREATE TABLE static (id int PRIMARY KEY, v int NOT NULL, token bigint);
CREATE FUNCTION read_static() RETURNS trigger LANGUAGE plpgsql AS \$\$
DECLARE t bigint;
BEGIN t := NEW.token; t := OLD.token; RETURN NEW; END \$\$;
CREATE TRIGGER r BEFORE UPDATE ON static FOR EACH ROW EXECUTE FUNCTION read_static();
CREATE FUNCTION floor_check(lock text, tok bigint) RETURNS boolean
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS \$\$
BEGIN
	PERFORM FROM public.dlock_lease AS l JOIN public.dlock_expiry AS e ON e.name = l.name
	  WHERE l.name = lock AND l.token = tok AND e.token = tok AND e.released_at IS NULL
		AND e.expires_at > clock_timestamp()
	  FOR SHARE OF l SKIP LOCKED;
	RETURN FOUND;
END \$\$;
CREATE FUNCTION floor_fence() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
	IF NOT floor_check(TG_ARGV[0], (row_to_json(OLD) ->> TG_ARGV[1])::bigint) THEN
		RAISE EXCEPTION 'stale';
	END IF;
	RETURN NEW;
END \$\$;
CREATE FUNCTION busy_floor(lock text) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS \$\$
BEGIN
	IF EXISTS (SELECT FROM public.dlock_expiry AS e WHERE e.name = lock AND e.released_at IS NULL
			   AND e.expires_at > clock_timestamp()) THEN
		RETURN NULL;
	END IF;
	RETURN 0;
END \$\$;
CREATE FUNCTION busy_noset(lock text) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER AS \$\$
BEGIN
	IF EXISTS (SELECT FROM public.dlock_expiry AS e WHERE e.name = lock AND e.released_at IS NULL
			   AND e.expires_at > clock_timestamp()) THEN
		RETURN NULL;
	END IF;
	RETURN 0;
END \$\$;
CREATE FUNCTION floor_acquire(lock text) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS \$\$
DECLARE t bigint;
BEGIN
	INSERT INTO public.hand_lease AS l (name, token, expires_at)
	VALUES (lock, nextval('public.hand_token_seq'), clock_timestamp() + interval '1 min')
	ON CONFLICT (name) DO UPDATE SET token = excluded.token, owner = excluded.owner, expires_at = excluded.expires_at
	 WHERE l.expires_at <= clock_timestamp()
	RETURNING l.token INTO t;
	RETURN t;
END \$\$;
CREATE FUNCTION floor_release(lock text, tok bigint) RETURNS boolean
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS \$\$
BEGIN
	UPDATE public.hand_lease AS l SET expires_at = clock_timestamp() WHERE l.name = lock AND l.token = tok;
	RETURN FOUND;
END \$\$;
CREATE TABLE floor (id int PRIMARY KEY, v int NOT NULL, token bigint);
CREATE TRIGGER r BEFORE UPDATE ON floor FOR EACH ROW EXECUTE FUNCTION floor_fence('bench', 'token');
SELECT dlock_acquire('bench', '1 day') AS tok \gset
SELECT dlock_acquire('held', '1 day');
INSERT INTO fenced SELECT i, 0, :tok FROM generate_series(1, 1000) i;
INSERT INTO plain SELECT * FROM fenced;
INSERT INTO static SELECT * FROM fenced;
INSERT INTO floor SELECT * FROM fenced;
SELECT count(dlock_release('p' || i, dlock_acquire('p' || i, '1 min'))) FROM generate_series(1, 1000) AS i;
CREATE TABLE hand_lease (name text PRIMARY KEY, token bigint NOT NULL,
                         owner text, expires_at timestamptz NOT NULL);
CREATE SEQUENCE hand_token_seq;
INSERT INTO hand_lease SELECT 'p' || i, i, NULL, now() - interval '1 s' FROM generate_series(1, 1000) AS i;
RESET ROLE;
VACUUM ANALYZE;
CREATE ROLE other;
SELECT :tok AS token \gset
\o $work/token
SELECT :token;
SETUP
status=$?
"${as[@]}" "$bindir/pg_ctl" -D "$work/data" -m fast -w stop >/dev/null
tok=$(tr -d ' \n' <"$work/token" 2>/dev/null)
[ $status = 0 ] && [ -n "$tok" ] || { cat "$work/setup.log" >&2; exit 1; }

declare -A stmt=(
	[plain]="UPDATE plain SET v = v + 1 WHERE id = %d;"
	[select1]="SELECT 1; UPDATE plain SET v = v + 1 WHERE id = %d;"
	[assert]="SELECT dlock_assert('bench', $tok); UPDATE plain SET v = v + 1 WHERE id = %d;"
	[fenced]="SELECT dlock_assert('bench', $tok); UPDATE fenced SET v = v + 1 WHERE id = %d;"
	[check]="UPDATE plain SET v = v + 1 WHERE id = %d AND dlock_check('bench', $tok);"
	[busy]="SELECT dlock_acquire('held', '1 min') IS NULL AND %d > 0;"
	[static]="SELECT 1; UPDATE static SET v = v + 1 WHERE id = %d;"
	[floor]="SELECT floor_check('bench', $tok); UPDATE floor SET v = v + 1 WHERE id = %d;"
	[busyfloor]="SELECT busy_floor('held') IS NULL AND %d > 0;"
	[busynoset]="SELECT busy_noset('held') IS NULL AND %d > 0;"
	[pairfloor]="SELECT floor_release('p%d', floor_acquire('p%d'));"
	[pair]="SELECT dlock_release('p%d', dlock_acquire('p%d', '1 min'));"
	[hand]="INSERT INTO hand_lease AS l (name, token, expires_at) VALUES ('p%d', nextval('hand_token_seq'), clock_timestamp() + interval '1 min') ON CONFLICT (name) DO UPDATE SET token = excluded.token, owner = excluded.owner, expires_at = excluded.expires_at WHERE l.expires_at <= clock_timestamp(); UPDATE hand_lease SET expires_at = clock_timestamp() WHERE name = 'p%d' AND token = currval('hand_token_seq');"
	[advisory]="SELECT pg_try_advisory_lock(1, %d) AND pg_advisory_unlock(1, %d);"
)
count() {
	local who=$1 n=$2 i s
	{
		echo "SET ROLE dlock_sql_admin;"
		for ((i = 0; i < n; i++)); do
			s=${stmt[$who]}
			echo "${s//%d/$((i * 7919 % 1000 + 1))}"
		done
	} >"$work/in.sql"
	collected
}

echo "instructions per transaction (callgrind, postgres --single, fsync off, SQL edition):"
for who in ${DLOCK_BENCH_CASES:-plain select1 assert fenced check busy static floor pair hand advisory busyfloor busynoset pairfloor}; do
	a=$(count "$who" 200) && b=$(count "$who" 1200) || { cat "$work/out.log" | head -5 >&2; exit 1; }
	printf '  %-8s %7.1fk\n' "$who" "$(per_run "$a" "$b")"
done
