#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
#
# test/sql_edition/revoke_pinners.sh: who holds a lease's check protection,
# as dlock_revoke(force => true), bounded pinning and dlock_waiters find it
# in the SQL edition (the a13 review of issue 27).  Each case was seen
# failing against the code before its fix.
#   subxact: a check made in a savepoint since released, or in a PL/pgSQL
#     block with an EXCEPTION clause, locks the lease row with an XID whose
#     lock the subtransaction gave up (xact.c, CommitSubTransaction): a
#     forced revoke ends the session, dlock_waiters lists it, and a waiter
#     past the pin grace ends it (finding 1);
#   multi: with the MultiXact counter past dlock_lease's relfrozenxid, two
#     checks of one lease (a MultiXact in the row) are still found and
#     ended (finding 2);
#   revoker: a session that revoked a lease, or called dlock_revoke to no
#     effect, and then checks another lease is ended past its pin grace like
#     any pinner (finding 3); a session whose revoke of a lease has written
#     and not committed is never ended by a forced revoke of that lease,
#     which gives up with 55P03 (finding 4);
#   preset: a caller that sets dlock_sql.pin_signalled before it waits does
#     not make the waiter terminate a running pinner without cancelling it
#     first (finding 5);
#   forged: the same with the key the setting was trusted with (the XID of
#     the waiter's queue lock, its own XID + 1, and md5 of the name): still
#     a cancel first (attack3 F2; the waiter keeps when it signalled in a
#     variable of its polling loop now, and reads no setting); the waiter's
#     client, at client_min_messages log, gets no LOG line about whom it
#     signals (7d);
#   sweep: a waiter past the pin grace behind a pinner it cannot identify
#     (a check in a released savepoint, with another session that can be
#     its top-level transaction) ends nobody and makes no MultiXact per
#     poll (attack3 F3: its probe, dlock_sql_ending, made one at every
#     poll, sweeping the MultiXact counter through the XIDs in use).
# The sessions are alice's and the tables' owner's (isolationtester's are a
# superuser's, which the tables' owner may not signal); the owner is made a
# member of pg_signal_backend, as a managed service's admin role is.
# Run by run.sh (suite operators) with PGHOST/PGPORT/PGUSER of its cluster.
set -euo pipefail

psql=(psql -X -q -At -v ON_ERROR_STOP=1 -d dlock_sql_test)
dir=$(mktemp -d "${TMPDIR:-/tmp}/dlock_revoke_pinners.XXXXXX")
fail() { echo "revoke_pinners: $*" >&2; exit 1; }
cleanup() {
	"${psql[@]}" -c "REVOKE pg_signal_backend FROM dlock_owner" -c "DROP TABLE IF EXISTS rpn_mx" \
		-c "UPDATE dlock.dlock_sql_settings SET pin_grace = NULL" >/dev/null 2>&1 || true
	kill $(jobs -p) 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
"${psql[@]}" -c "GRANT pg_signal_backend TO dlock_owner"
# RPN_CASES: the cases to run (all by default), to see each fail alone
# against the code before its fix.
cases=" ${RPN_CASES:-subxact multi revoker two preset forged sweep} "
want() { [[ $cases == *" $1 "* ]]; }

# session_pid APP: the pid of the session of application_name APP once it
# is idle in its transaction (or, with a second argument, running it).
session_pid() {
	local pid= state=${2:-idle in transaction}
	for _ in $(seq 100); do
		pid=$("${psql[@]}" -c "SELECT pid FROM pg_stat_activity WHERE application_name = '$1'
			AND state = '$state' AND ('$state' <> 'active' OR query LIKE '%pg_sleep%')")
		[ -n "$pid" ] && break
		sleep 0.1
	done
	[ -n "$pid" ] || fail "$1: the session did not start"
	echo "$pid"
}
alive() { "${psql[@]}" -c "SELECT count(*) FROM pg_stat_activity WHERE pid = $1"; }
# pinner APP ROLE SQL: a session of ROLE that runs SQL in a transaction and
# stays in it; prints its pid.
pinner() {
	{ echo "BEGIN; $3"; sleep 60; } | PGAPPNAME=$1 psql -X -U "$2" -d dlock_sql_test >"$dir/$1.out" 2>&1 &
	session_pid "$1" "${4:-idle in transaction}"
}

# Finding 1: checks in subtransactions.
if want subxact; then
	sub_savepoint() { echo "SAVEPOINT s; SELECT dlock.dlock_check('$1', $2); RELEASE s;"; }
	sub_block() { echo "DO \$\$BEGIN PERFORM dlock.dlock_check('$1', $2); EXCEPTION WHEN OTHERS THEN NULL; END\$\$;"; }
	for how in savepoint block; do
		name=rpn-$how
		tok=$("${psql[@]}" -U alice -c "SELECT dlock.dlock_acquire('$name', '1 min')")
		pid=$(pinner "$name" alice "$(sub_$how "$name" "$tok")")
		got=$("${psql[@]}" -c "SELECT xmax::text <> (SELECT backend_xid::text FROM pg_stat_activity WHERE pid = $pid)
			FROM dlock.dlock_lease WHERE name = '$name'")
		[ "$got" = t ] || fail "$how: the lease row is not locked by a subtransaction's XID"
		got=$("${psql[@]}" -c "SELECT revoked_token = $tok, waited_for = ARRAY[$pid], ended = ARRAY[$pid]
			FROM dlock.dlock_revoke('$name', wait => '300 ms', force => true)" 2>&1) || true
		[ "$got" = "t|t|t" ] || fail "$how: the forced revoke answered $got (token, waited_for, ended)"
		sleep 0.2
		[ "$(alive "$pid")" = 0 ] || fail "$how: the pinning session was not ended"
		echo "revoke_pinners: subxact $how, forced revoke ok"
	done
	# dlock_waiters and the pin grace, with a check in a released savepoint.
	"${psql[@]}" -c "UPDATE dlock.dlock_sql_settings SET pin_grace = '500 ms'"
	tok=$("${psql[@]}" -U alice -c "SELECT dlock.dlock_acquire('rpn-grace', '2 s')")
	pid=$(pinner rpn-grace alice "$(sub_savepoint rpn-grace "$tok")")
	sleep 2.1
	got=$("${psql[@]}" -c "SELECT string_agg(kind || ':' || (pid = $pid), ',') FROM dlock.dlock_waiters WHERE name = 'rpn-grace'")
	[ "$got" = "pinning:true" ] || fail "subxact: dlock_waiters shows $got for the pinner in a savepoint"
	got=$("${psql[@]}" -U bob -c "SELECT coalesce((dlock.dlock_acquire('rpn-grace', '1 min', wait => '10 s') > $tok)::text, 'busy')")
	[ "$got" = true ] || fail "subxact: the waiter past the pin grace got $got, expected a newer token"
	sleep 0.2
	[ "$(alive "$pid")" = 0 ] || fail "subxact: the waiter did not end the pinner in a savepoint"
	echo "revoke_pinners: subxact, dlock_waiters and pin grace ok"
fi

# Finding 2: MultiXacts numbered above dlock_lease's relfrozenxid (which a
# VACUUM would move on).  One MultiXact per transaction, two lockers of a
# row of rpn_mx, up to that number; the XID counter moves on as much, so
# the MultiXacts stay below the XIDs in use.
if want multi; then
	"${psql[@]}" -c "CREATE TABLE rpn_mx AS SELECT 1 AS g"
	{ echo "BEGIN; SELECT FROM rpn_mx FOR SHARE;"; sleep 600; } | PGAPPNAME=rpn-mx psql -X -d dlock_sql_test >/dev/null 2>&1 &
	session_pid rpn-mx >/dev/null
	"${psql[@]}" -c "DO \$\$BEGIN
		WHILE mxid_age('1'::xid) <= (SELECT relfrozenxid::text::int8 + 10 FROM pg_class
		                             WHERE oid = 'dlock.dlock_lease'::regclass) LOOP
			PERFORM FROM rpn_mx FOR SHARE;
			COMMIT;
		END LOOP;
	END\$\$"
	"${psql[@]}" -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'rpn-mx'" >/dev/null
	tok=$("${psql[@]}" -U alice -c "SELECT dlock.dlock_acquire('rpn-multi', '1 min')")
	p1=$(pinner rpn-multi1 alice "SELECT dlock.dlock_check('rpn-multi', $tok);")
	p2=$(pinner rpn-multi2 alice "SELECT dlock.dlock_check('rpn-multi', $tok);")
	got=$("${psql[@]}" -c "SELECT mxid_age(xmax) > 0 AND xmax::text::int8 > (SELECT relfrozenxid::text::int8 FROM pg_class
			WHERE oid = 'dlock.dlock_lease'::regclass) FROM dlock.dlock_lease WHERE name = 'rpn-multi'")
	[ "$got" = t ] || fail "multi: the lease row's xmax is not a MultiXact above relfrozenxid"
	got=$("${psql[@]}" -c "SELECT string_agg(kind, ',' ORDER BY pid) FROM dlock.dlock_waiters
		WHERE name = 'rpn-multi' AND pid IN ($p1, $p2)")
	# Held: no waiter, and a held lease's checkers are not listed as pinning.
	[ -z "$got" ] || fail "multi: dlock_waiters lists $got for a held lease"
	got=$("${psql[@]}" -c "SELECT revoked_token = $tok, waited_for = ARRAY[$p1, $p2], ended = ARRAY[$p1, $p2]
		FROM dlock.dlock_revoke('rpn-multi', wait => '300 ms', force => true)" 2>&1) || true
	[ "$got" = "t|t|t" ] || fail "multi: the forced revoke answered $got (token, waited_for, ended)"
	echo "revoke_pinners: multi ok"
fi

# Finding 3: a session of the tables' owner (EXECUTE on dlock_revoke) that
# revoked a lease, or called dlock_revoke for nothing, then pins a lease of
# its own: past the pin grace the waiter ends it.
if want revoker; then
	"${psql[@]}" -c "UPDATE dlock.dlock_sql_settings SET pin_grace = '500 ms'"
	for how in revoked nothing; do
		other=$("${psql[@]}" -U alice -c "SELECT dlock.dlock_acquire('rpn-other-$how', '1 min')")
		if [ $how = nothing ]; then
			"${psql[@]}" -U alice -c "SELECT dlock.dlock_release('rpn-other-$how', $other)" >/dev/null
		fi
		tok=$("${psql[@]}" -U dlock_owner -c "SELECT dlock.dlock_acquire('rpn-$how', '2 s')")
		pid=$(pinner "rpn-$how" dlock_owner "SELECT revoked_token IS NOT NULL FROM dlock.dlock_revoke('rpn-other-$how');
			SELECT dlock.dlock_check('rpn-$how', $tok);")
		got=$("${psql[@]}" -U bob -c "SELECT coalesce((dlock.dlock_acquire('rpn-$how', '1 min', wait => '10 s') > $tok)::text, 'busy')")
		[ "$got" = true ] || fail "revoker $how: the waiter got $got behind a pinner that called dlock_revoke"
		sleep 0.2
		[ "$(alive "$pid")" = 0 ] || fail "revoker $how: the pinner that called dlock_revoke was not ended"
		echo "revoke_pinners: revoker $how, pinned ok"
	done
	"${psql[@]}" -c "UPDATE dlock.dlock_sql_settings SET pin_grace = NULL"
fi

# Finding 4: a forced revoke never ends a session whose revoke of the same
# lease has written and not committed; it gives up with 55P03.
if want two; then
	tok=$("${psql[@]}" -U alice -c "SELECT dlock.dlock_acquire('rpn-two', '1 min')")
	pid=$(pinner rpn-two dlock_owner "SELECT revoked_token = $tok FROM dlock.dlock_revoke('rpn-two');")
	grep -qx " t" "$dir/rpn-two.out" || grep -q "^ t$" "$dir/rpn-two.out" || fail "two: the first revoke did not revoke: $(cat "$dir/rpn-two.out")"
	got=$("${psql[@]}" -c "SELECT * FROM dlock.dlock_revoke('rpn-two', wait => '200 ms', force => true)" 2>&1) && fail "two: the second revoke answered $got"
	[[ $got == *"could not revoke lease \"rpn-two\""* && $got == *"A transaction that changes the lease (an acquire or a revoke in progress) is still open"* ]] ||
		fail "two: the second revoke raised $got"
	[ "$(alive "$pid")" = 1 ] || fail "two: the forced revoke ended the session revoking the same lease"
	"${psql[@]}" -c "SELECT pg_terminate_backend($pid)" >/dev/null
	echo "revoke_pinners: two revokes ok"
fi

# Finding 5: the setting dlock_sql.pin_signalled preset by the waiter's
# caller: a running pinner past the grace is cancelled first (its session
# lives on), as without it.
if want preset; then
	"${psql[@]}" -c "UPDATE dlock.dlock_sql_settings SET pin_grace = '100 ms'"
	tok=$("${psql[@]}" -U alice -c "SELECT dlock.dlock_acquire('rpn-preset', '2 s')")
	pid=$(pinner rpn-preset alice "SELECT dlock.dlock_check('rpn-preset', $tok); SELECT pg_sleep(60);" active)
	got=$("${psql[@]}" -U bob -c "SELECT set_config('dlock_sql.pin_signalled', '2000-01-01 00:00:00+00', false) IS NOT NULL" \
		-c "SELECT coalesce((dlock.dlock_acquire('rpn-preset', '1 min', wait => '10 s') > $tok)::text, 'busy')")
	[ "$got" = $'t\ntrue' ] || fail "preset: the waiter got $got"
	sleep 0.2
	[ "$(alive "$pid")" = 1 ] || fail "preset: the running pinner was terminated without a cancel first"
	grep -q "canceling statement" "$dir/rpn-preset.out" || fail "preset: the pinner was not cancelled: $(cat "$dir/rpn-preset.out")"
	"${psql[@]}" -c "SELECT pg_terminate_backend($pid)" >/dev/null
fi

# attack3 F2: the setting forged with the key the code before trusted.
if want forged; then
	"${psql[@]}" -c "UPDATE dlock.dlock_sql_settings SET pin_grace = '100 ms'"
	tok=$("${psql[@]}" -U alice -c "SELECT dlock.dlock_acquire('rpn-forged', '2 s')")
	pid=$(pinner rpn-forged alice "SELECT dlock.dlock_check('rpn-forged', $tok); SELECT pg_sleep(60);" active)
	# The waiter's client, at client_min_messages log, gets none of the LOG
	# lines about whom it signals (the C edition's LOG_SERVER_ONLY).
	got=$(PGOPTIONS="-c client_min_messages=log" "${psql[@]}" -U bob -c "BEGIN" \
		-c "SELECT set_config('dlock_sql.pin_signalled', (pg_current_xact_id()::text::int8 + 1)::text || ' '
			|| md5('rpn-forged') || ' 2000-01-01 00:00:00+00', true) IS NOT NULL" \
		-c "SELECT coalesce((dlock.dlock_acquire('rpn-forged', '1 min', wait => '10 s') > $tok)::text, 'busy')" \
		-c "COMMIT" 2>"$dir/forged-waiter.err")
	[ "$got" = $'t\ntrue' ] || fail "forged: the waiter got $got"
	! grep -q "dlock: " "$dir/forged-waiter.err" || fail "forged: the waiter's client got $(cat "$dir/forged-waiter.err")"
	sleep 0.2
	[ "$(alive "$pid")" = 1 ] || fail "forged: the running pinner was terminated without a cancel first"
	grep -q "canceling statement" "$dir/rpn-forged.out" || fail "forged: the pinner was not cancelled: $(cat "$dir/rpn-forged.out")"
	"${psql[@]}" -c "SELECT pg_terminate_backend($pid)" >/dev/null
	"${psql[@]}" -c "UPDATE dlock.dlock_sql_settings SET pin_grace = NULL"
	echo "revoke_pinners: forged ok"
fi

# attack3 F3: behind a pinner nobody can be told to be, the waiter polls
# without probing the lease row: no new MultiXact, nobody ended.
if want sweep; then
	"${psql[@]}" -c "UPDATE dlock.dlock_sql_settings SET pin_grace = '300 ms'"
	other=$("${psql[@]}" -U alice -c "SELECT dlock.dlock_acquire('rpn-sweep-other', '1 min')")
	tok=$("${psql[@]}" -U alice -c "SELECT dlock.dlock_acquire('rpn-sweep', '1 s')")
	o=$(pinner rpn-sweep-o alice "SELECT dlock.dlock_check('rpn-sweep-other', $other);")
	p=$(pinner rpn-sweep-p alice "SAVEPOINT s; SELECT dlock.dlock_check('rpn-sweep', $tok); RELEASE s;")
	got=$("${psql[@]}" -c "SELECT cardinality(dlock.dlock_sql_pinners('rpn-sweep'))")
	[ "$got" = 0 ] || fail "sweep: the pinner in a savepoint was identified ($got): the case needs it not to be"
	before=$("${psql[@]}" -c "SELECT mxid_age('1'::xid)")
	got=$("${psql[@]}" -U bob -c "SELECT dlock.dlock_acquire('rpn-sweep', '1 min', wait => '2 s') IS NULL")
	after=$("${psql[@]}" -c "SELECT mxid_age('1'::xid)")
	[ "$got" = t ] || fail "sweep: the waiter got the lease behind a pinner nobody can end"
	[ $((after - before)) -le 1 ] || fail "sweep: the waiter made $((after - before)) MultiXacts while it polled"
	[ "$(alive "$o")$(alive "$p")" = 11 ] || fail "sweep: the waiter ended a session ($o: $(alive "$o"), $p: $(alive "$p"))"
	"${psql[@]}" -c "SELECT pg_terminate_backend($o), pg_terminate_backend($p)" >/dev/null
	"${psql[@]}" -c "UPDATE dlock.dlock_sql_settings SET pin_grace = NULL"
	echo "revoke_pinners: sweep ok"
fi

echo "revoke_pinners: all passed"
