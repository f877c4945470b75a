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
CREATE TABLE floor (id int PRIMARY KEY, v int NOT NULL, token bigint);
CREATE TRIGGER r BEFORE UPDATE ON floor FOR EACH ROW EXECUTE FUNCTION floor_fence('bench', 'token');
SELECT dlock_acquire('bench', '1 day') AS tok \gset
SELECT dlock_acquire('held', '1 day');
INSERT INTO fenced SELECT i, 0, :tok FROM generate_series(1, 1000) i;
INSERT INTO plain SELECT * FROM fenced;
INSERT INTO static SELECT * FROM fenced;
INSERT INTO floor SELECT * FROM fenced;
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
)
count() {
	local who=$1 n=$2 i
	{
		echo "SET ROLE dlock_sql_admin;"
		for ((i = 0; i < n; i++)); do
			printf "${stmt[$who]}\n" $((i * 7919 % 1000 + 1))
		done
	} >"$work/in.sql"
	collected
}

echo "instructions per transaction (callgrind, postgres --single, fsync off, SQL edition):"
for who in ${DLOCK_BENCH_CASES:-plain select1 assert fenced check busy static floor}; do
	a=$(count "$who" 200) && b=$(count "$who" 1200) || { cat "$work/out.log" | head -5 >&2; exit 1; }
	printf '  %-8s %7.1fk\n' "$who" "$(per_run "$a" "$b")"
done
