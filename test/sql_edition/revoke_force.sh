#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
#
# test/sql_edition/revoke_force.sh: dlock_revoke(force => true) in the SQL
# edition (issue 27 items 4 and 7) ends the transactions that hold a
# lease's check protection: a session idle in its transaction is
# terminated, a running statement is cancelled (the session lives on), and
# a cancel inside a savepoint, which leaves the outer transaction's check,
# is followed by a terminate.  None of their writes commits; the revoked
# token is stale; the next acquire gets a newer token.  The sessions are
# alice's own (isolationtester's are a superuser's, which the tables'
# owner may not signal); the tables' owner is made a member of
# pg_signal_backend, as a managed service's admin role is.
# Run by run.sh (suite operators) with PGHOST/PGPORT/PGUSER of its cluster.
set -euo pipefail

psql=(psql -X -q -At -v ON_ERROR_STOP=1 -d dlock_sql_test)
dir=$(mktemp -d "${TMPDIR:-/tmp}/dlock_revoke_force.XXXXXX")
fail() { echo "revoke_force: $*" >&2; exit 1; }
cleanup() {
	"${psql[@]}" -c "REVOKE pg_signal_backend FROM dlock_owner" -c "DROP TABLE IF EXISTS rf_write" >/dev/null 2>&1 || true
	kill $(jobs -p) 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
"${psql[@]}" -c "GRANT pg_signal_backend TO dlock_owner" \
	-c "CREATE TABLE rf_write (v text)" -c "GRANT ALL ON rf_write TO alice"

# case_run NAME SQL ENDED ALIVE [WAIT]: alice's session checks the lease,
# runs SQL and stays in its transaction; a forced revoke (wait => WAIT,
# default 300 ms) must end it (ENDED: t), and the session must then be
# gone (ALIVE 0: terminated) or live on (1).  With wait => 0 or 1 ms the
# revoke must not give up before the ended backend has let the lease go
# (the C edition's finding: each round after the signals waits at least a
# second).
case_run() {
	local name=$1 body=$2 want_ended=$3 want_alive=$4 wait=${5:-300 ms}
	local tok pid out revoked newer
	tok=$("${psql[@]}" -U alice -c "SELECT dlock.dlock_acquire('rf-$name', '1 min')")
	{ echo "BEGIN; SELECT dlock.dlock_check('rf-$name', $tok); $body"; sleep 60; } |
		PGAPPNAME=rf-$name psql -X -U alice -d dlock_sql_test >"$dir/$name.out" 2>&1 &
	for _ in $(seq 100); do
		pid=$("${psql[@]}" -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'rf-$name'
			AND (state LIKE 'idle in transaction%' OR query LIKE '%pg_sleep%')")
		[ -n "$pid" ] && break
		sleep 0.1
	done
	[ -n "$pid" ] || fail "$name: the session did not start"
	sleep 0.3
	out=$("${psql[@]}" -c "SELECT revoked_token = $tok, waited_for = ARRAY[$pid], ended = ARRAY[$pid]
		FROM dlock.dlock_revoke('rf-$name', wait => '$wait', force => true)" 2>&1)
	[ "$out" = "t|t|$want_ended" ] || fail "$name: revoke answered $out (token, waited_for, ended)"
	out=$("${psql[@]}" -U alice -c "SELECT dlock.dlock_check('rf-$name', $tok),
		dlock.dlock_renew('rf-$name', $tok, '1 min'), dlock.dlock_release('rf-$name', $tok)")
	[ "$out" = "f|f|f" ] || fail "$name: the revoked token still works ($out)"
	newer=$("${psql[@]}" -U bob -c "SELECT dlock.dlock_acquire('rf-$name', '1 min') > $tok")
	[ "$newer" = t ] || fail "$name: the next acquire got no newer token"
	sleep 0.2
	out=$("${psql[@]}" -c "SELECT count(*) FROM pg_stat_activity WHERE pid = $pid")
	[ "$out" = "$want_alive" ] || fail "$name: session alive = $out, expected $want_alive"
	out=$("${psql[@]}" -c "SELECT count(*) FROM rf_write WHERE v = '$name'")
	[ "$out" = 0 ] || fail "$name: the ended transaction's write committed"
	echo "revoke_force: $name ok"
}

case_run idle "INSERT INTO rf_write VALUES ('idle');" t 0
case_run running "INSERT INTO rf_write VALUES ('running'); SELECT pg_sleep(60);" t 1
grep -q "canceling statement" "$dir/running.out" || fail "running: not cancelled: $(cat "$dir/running.out")"
case_run savepoint "SAVEPOINT s; INSERT INTO rf_write VALUES ('savepoint'); SELECT pg_sleep(60);" t 0
grep -q "canceling statement" "$dir/savepoint.out" || fail "savepoint: not cancelled first"
case_run idle0 "INSERT INTO rf_write VALUES ('idle0');" t 0 0
case_run running1ms "INSERT INTO rf_write VALUES ('running1ms'); SELECT pg_sleep(60);" t 1 '1 ms'
case_run savepoint0 "SAVEPOINT s; INSERT INTO rf_write VALUES ('savepoint0'); SELECT pg_sleep(60);" t 0 0

# Bounded pinning (item 7): a session idle in its transaction after a check
# holds the expired lease; with the holder's pin grace, a waiting acquire
# ends it once expiry + grace has passed and then takes the lease; without
# one, the waiter stays busy.  pin_case NAME GRACE WAIT WANT_NEWER WANT_ALIVE
pin_case() {
	local name=$1 grace=$2 wait=$3 want=$4 want_alive=$5 tok pid got pin_at
	"${psql[@]}" -c "UPDATE dlock.dlock_sql_settings SET pin_grace = $grace"
	tok=$("${psql[@]}" -U alice -c "SELECT dlock.dlock_acquire('rf-$name', '1 s')")
	{ echo "BEGIN; SELECT dlock.dlock_check('rf-$name', $tok); INSERT INTO rf_write VALUES ('$name');"; sleep 60; } |
		PGAPPNAME=rf-$name psql -X -U alice -d dlock_sql_test >"$dir/$name.out" 2>&1 &
	for _ in $(seq 100); do
		pid=$("${psql[@]}" -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'rf-$name'
			AND state = 'idle in transaction'")
		[ -n "$pid" ] && break
		sleep 0.1
	done
	[ -n "$pid" ] || fail "$name: the session did not start"
	pin_at=$("${psql[@]}" -c "SELECT expires_at + coalesce(pin_grace, '0') FROM dlock.dlock_expiry WHERE name = 'rf-$name'")
	got=$("${psql[@]}" -U bob -c "SELECT coalesce((dlock.dlock_acquire('rf-$name', '1 min', wait => '$wait') > $tok)::text, 'busy'),
		clock_timestamp() >= '$pin_at'")
	[ "$got" = "$want" ] || fail "$name: the waiter got $got, expected $want"
	sleep 0.2
	got=$("${psql[@]}" -c "SELECT count(*) FROM pg_stat_activity WHERE pid = $pid")
	[ "$got" = "$want_alive" ] || fail "$name: pinning session alive = $got, expected $want_alive"
	echo "revoke_force: $name ok"
}
pin_case pin "'1 s'" "20 s" "true|t" 0
pin_case nopin NULL "2 s" "busy|t" 1
"${psql[@]}" -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'rf-nopin'" >/dev/null
"${psql[@]}" -c "UPDATE dlock.dlock_sql_settings SET pin_grace = NULL"
echo "revoke_force: all passed"
