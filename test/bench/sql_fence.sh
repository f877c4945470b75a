#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/bench/sql_fence.sh: what the SQL edition's dlock_fence trigger costs
# (issue 26 item 6: a fenced single-row UPDATE >= 0.7 x a plain one), by
# hand or from make bench (PGHOST/PGPORT/PGUSER set, a superuser; the SQL
# edition is installed from src/sql into a scratch database as an ordinary
# role, dlock_sql_admin, as the psql script form does).
#
# pgbench, one transaction per run of each script, contenders alternating,
# the client count of the C edition's fence bench (test/bench/fence.sh, 8):
#   fenced   SELECT dlock_assert(...) \; UPDATE fenced ... (a declaration and
#            one single-row UPDATE through the trigger, one round trip)
#   plain    the same UPDATE on a table without the trigger
#   asserted SELECT dlock_assert(...) \; UPDATE plain ... (the declaration and
#            its check protection without the trigger: the core's share)
# and, for how the trigger reads the row's columns by name (the argument
# names the token column), one BEFORE UPDATE trigger per way of reading it,
# doing nothing else:
#   jsonb    to_jsonb(NEW) ->> column            (what dlock_fence does)
#   json     row_to_json(NEW) ->> column
#   execute  EXECUTE format('SELECT ($1).%I', column) USING NEW
#   static   NEW.token                           (a trigger written for the
#            table: the floor for any PL/pgSQL trigger)
# and the floor of the fence's design in PL/pgSQL (test/bench/sql_instructions.sh
# counts its instructions):
#   floor    SELECT floor_check(...) \; UPDATE floor ...: a SECURITY DEFINER
#            function whose one statement reads the lease and expiry rows and
#            takes the FOR SHARE lock, called as the declaration and again by
#            a BEFORE UPDATE trigger reading the row's token by name
#            (row_to_json); no argument, role, configuration or prepare
#            checks
#   locked   SELECT FROM dlock_lease WHERE name = 'bench' FOR SHARE \; UPDATE
#            plain ...: the check protection's row lock alone, as a plain
#            statement (run by the superuser): what 8 clients sharing a lock
#            on one row cost, MultiXacts included, without any PL/pgSQL
# fsync is switched off for the run (ALTER SYSTEM, reset at the end).  The
# fenced runs take the check protection, a FOR SHARE row lock on the
# lease's row, in every client: concurrent lockers of one row make
# MultiXacts, and the MultiXact members used per second are reported (from
# pg_control_checkpoint() around the fenced runs).
#
# Environment: DLOCK_BENCH_SECONDS (per run, default 5), DLOCK_BENCH_ROUNDS
# (default 3), DLOCK_BENCH_CLIENTS (default 8), DLOCK_BENCH_QUICK=1 (1 s, 1
# round), DLOCK_SQL_SCRIPT (the edition's script with @extschema@ left in;
# default: src/sql/[0-9]*.sql concatenated).
set -uo pipefail

T=${DLOCK_BENCH_SECONDS:-5}
ROUNDS=${DLOCK_BENCH_ROUNDS:-3}
C=${DLOCK_BENCH_CLIENTS:-8}
if [ -n "${DLOCK_BENCH_QUICK:-}" ]; then
	T=1 ROUNDS=1
fi
top=$(cd "$(dirname "$0")/../.." && pwd)
DB=dlock_bench_sql_fence
ROWS=1000
work=$(mktemp -d)
chmod 755 "$work"

q() { psql -X -q -v ON_ERROR_STOP=1 -d "$DB" -At "$@"; }

cleanup() {
	psql -X -q -d postgres -c "ALTER SYSTEM RESET fsync" -c "SELECT pg_reload_conf()" >/dev/null 2>&1
	psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT

if [ -n "${DLOCK_SQL_SCRIPT:-}" ]; then
	cat "$DLOCK_SQL_SCRIPT"
else
	cat "$top"/src/sql/[0-9]*.sql
fi | sed 's/@extschema@/public/g' >"$work/edition.sql"

psql -X -q -d postgres -c "SET client_min_messages = warning" \
	-c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" \
	-c "DO \$\$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'dlock_sql_admin') THEN CREATE ROLE dlock_sql_admin; END IF; END \$\$" \
	|| exit 1
psql -X -q -d postgres -c "ALTER SYSTEM SET fsync = off" -c "SELECT pg_reload_conf()" >/dev/null || exit 1
cat >"$work/setup.sql" <<SETUP
SET client_min_messages = warning;
GRANT CREATE ON SCHEMA public TO dlock_sql_admin;
SET ROLE dlock_sql_admin;
\i $work/edition.sql
RESET ROLE;
CREATE TABLE fenced (id int PRIMARY KEY, v int NOT NULL, token bigint);
CREATE TRIGGER fenced_fence BEFORE INSERT OR UPDATE OR DELETE ON fenced
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('bench', 'token');
CREATE TABLE plain (id int PRIMARY KEY, v int NOT NULL, token bigint);
CREATE FUNCTION read_jsonb() RETURNS trigger LANGUAGE plpgsql AS \$\$
DECLARE t bigint;
BEGIN t := (to_jsonb(NEW) ->> TG_ARGV[0])::bigint; RETURN NEW; END \$\$;
CREATE FUNCTION read_json() RETURNS trigger LANGUAGE plpgsql AS \$\$
DECLARE t bigint;
BEGIN t := (row_to_json(NEW) ->> TG_ARGV[0])::bigint; RETURN NEW; END \$\$;
CREATE FUNCTION read_execute() RETURNS trigger LANGUAGE plpgsql AS \$\$
DECLARE t bigint;
BEGIN EXECUTE format('SELECT (\$1).%I', TG_ARGV[0]) INTO t USING NEW; RETURN NEW; END \$\$;
CREATE FUNCTION read_static() RETURNS trigger LANGUAGE plpgsql AS \$\$
DECLARE t bigint;
BEGIN t := NEW.token; RETURN NEW; END \$\$;
CREATE FUNCTION floor_check(lock text, tok bigint) RETURNS boolean
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS \$\$
BEGIN
	PERFORM FROM public.dlock_lease AS l JOIN public.dlock_expiry AS e ON e.name = l.name
	  WHERE l.name = lock AND l.token = tok AND e.token = tok AND e.released_at IS NULL
		AND e.expires_at > clock_timestamp()
	  FOR SHARE OF l SKIP LOCKED;
	RETURN FOUND;
END \$\$;
ALTER FUNCTION floor_check(text, bigint) OWNER TO dlock_sql_admin;
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
INSERT INTO floor SELECT i, 0, :tok FROM generate_series(1, $ROWS) i;
INSERT INTO fenced SELECT i, 0, :tok FROM generate_series(1, $ROWS) i;
INSERT INTO plain SELECT i, 0, :tok FROM generate_series(1, $ROWS) i;
SELECT format('CREATE TABLE %1\$I (LIKE plain INCLUDING ALL); INSERT INTO %1\$I SELECT * FROM plain; '
              'CREATE TRIGGER r BEFORE UPDATE ON %1\$I FOR EACH ROW EXECUTE FUNCTION read_%1\$s(%2\$L);',
              w, 'token')
  FROM unnest('{jsonb,json,execute,static}'::text[]) AS w \gexec
VACUUM ANALYZE;
SELECT :tok;
SETUP
tok=$(q -f "$work/setup.sql" | tail -n 1) || exit 1
[ -n "$tok" ] || { echo "setup failed" >&2; exit 1; }

cat >"$work/fenced.sql" <<'SCRIPT'
\set id random(1, :rows)
SELECT dlock_assert('bench', :tok) \; UPDATE fenced SET v = v + 1 WHERE id = :id;
SCRIPT
cat >"$work/floor.sql" <<'SCRIPT'
\set id random(1, :rows)
SELECT floor_check('bench', :tok) \; UPDATE floor SET v = v + 1 WHERE id = :id;
SCRIPT
cat >"$work/locked.sql" <<'SCRIPT'
\set id random(1, :rows)
SELECT FROM dlock_lease WHERE name = 'bench' FOR SHARE \; UPDATE plain SET v = v + 1 WHERE id = :id;
SCRIPT
cat >"$work/asserted.sql" <<'SCRIPT'
\set id random(1, :rows)
SELECT dlock_assert('bench', :tok) \; UPDATE plain SET v = v + 1 WHERE id = :id;
SCRIPT
for who in plain jsonb json execute static; do
	printf '\\set id random(1, :rows)\nUPDATE %s SET v = v + 1 WHERE id = :id;\n' "$who" >"$work/$who.sql"
done

# MultiXact members handed out so far, as of a checkpoint made now.
multixact() {
	psql -X -q -d postgres -At -c "CHECKPOINT" \
		-c "SELECT next_multi_offset, next_multixact_id FROM pg_control_checkpoint()"
}

echo "pgbench: $C clients, ${T}s per run, $ROUNDS rounds, fsync off, $ROWS rows"
results=$work/results.tsv
for round in $(seq "$ROUNDS"); do
	for who in fenced plain asserted floor locked jsonb json execute static; do
		[ "$who" = fenced ] && before=$(multixact)
		out=$(pgbench -n -M simple -c "$C" -j 2 -T "$T" -D rows="$ROWS" -D tok="$tok" \
			-f "$work/$who.sql" "$DB" 2>&1)
		[ "$who" = fenced ] && after=$(multixact)
		tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' <<<"$out")
		if [ -z "$tps" ] || grep -q 'ERROR' <<<"$out"; then
			echo "pgbench failed for $who:" >&2
			echo "$out" >&2
			exit 1
		fi
		printf '%s\t%s\n' "$who" "$tps" >>"$results"
		if [ "$who" = fenced ]; then
			members=$(( (${after%%|*} - ${before%%|*}) & 0xffffffff ))
			multis=$(( (${after##*|} - ${before##*|}) & 0xffffffff ))
			printf 'members\t%s\nmultis\t%s\n' "$((members / T))" "$((multis / T))" >>"$results"
			printf '  round %d  %-7s %10.0f tps  %8d MultiXact members/s  %8d MultiXacts/s\n' \
				"$round" "$who" "$tps" "$((members / T))" "$((multis / T))"
		else
			printf '  round %d  %-7s %10.0f tps\n' "$round" "$who" "$tps"
		fi
	done
done
# The fenced runs must have changed rows: the trigger let the holder in.
changed=$(q -c "SELECT sum(v) FROM fenced")
[ "${changed:-0}" -gt 0 ] || { echo "no fenced UPDATE changed a row" >&2; exit 1; }

/usr/bin/python3 - "$results" <<'REPORT'
import statistics, sys
tps = {}
for line in open(sys.argv[1]):
    who, t = line.split()
    tps.setdefault(who, []).append(float(t))
m = {w: statistics.median(v) for w, v in tps.items()}
r = m["fenced"] / m["plain"]
print(f"medians: fenced {m['fenced']:.0f}, plain {m['plain']:.0f} tps; "
      f"{m['members']:.0f} MultiXact members/s, {m['multis']:.0f} MultiXacts/s while fenced")
print(f"  fenced / plain   {r:5.2f}x  (target >= 0.7x)  {'met' if r >= 0.7 else 'MISSED'}")
print(f"  asserted / plain {m['asserted'] / m['plain']:5.2f}x  (the declaration and its check protection, no trigger)")
print(f"  fenced / asserted {m['fenced'] / m['asserted']:5.2f}x  (what the trigger adds)")
print(f"  floor / plain    {m['floor'] / m['plain']:5.2f}x  (the design's floor in PL/pgSQL: one lease statement in the declaration, one in the trigger)")
print(f"  fenced / floor   {m['fenced'] / m['floor']:5.2f}x")
print(f"  locked / plain   {m['locked'] / m['plain']:5.2f}x  (the FOR SHARE row lock alone, one plain statement)")
print("  reading the token column by name in a BEFORE UPDATE trigger, / plain:")
for w in ("jsonb", "json", "execute", "static"):
    print(f"    {w:8s} {m[w] / m['plain']:5.2f}x")
REPORT
