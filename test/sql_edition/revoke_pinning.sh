#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
#
# test/sql_edition/revoke_pinning.sh: bounded pinning in the SQL edition
# never ends a revoking session (issue 27).  A revoke holds the lease row
# from its write until its transaction ends, which reads in the row's xmax
# as a pinner's lock; a waiter past the lease's pin grace must not end it
# (dlock_sql_ending: the revoke holds the row more strongly than a check
# does), and takes the lease once the revoke commits, while
# a real pinner of another lease is still ended.  The revoking session is
# the tables' owner's (isolationtester's sessions are a superuser's, which
# bounded pinning never ends); the owner is made a member of
# pg_signal_backend, as a managed service's admin role is.
# Run by run.sh (suite operators) with PGHOST/PGPORT/PGUSER of its cluster.
set -euo pipefail

psql=(psql -X -q -At -v ON_ERROR_STOP=1 -d dlock_sql_test)
dir=$(mktemp -d "${TMPDIR:-/tmp}/dlock_revoke_pinning.XXXXXX")
fail() { echo "revoke_pinning: $*" >&2; exit 1; }
cleanup() {
	"${psql[@]}" -c "REVOKE pg_signal_backend FROM dlock_owner" \
		-c "UPDATE dlock.dlock_sql_settings SET pin_grace = NULL" >/dev/null 2>&1 || true
	kill $(jobs -p) 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
"${psql[@]}" -c "GRANT pg_signal_backend TO dlock_owner" \
	-c "UPDATE dlock.dlock_sql_settings SET pin_grace = '100 ms'"

# until_go NAME: wait (at most a minute) until the file go-NAME exists: the
# step that tells a background session to end its transaction.
until_go() {
	for _ in $(seq 600); do
		[ -e "$dir/go-$1" ] && return
		sleep 0.1
	done
}

# session_pid APP: the pid of the session of application_name APP once it
# is idle in its transaction.
session_pid() {
	local pid=
	for _ in $(seq 100); do
		pid=$("${psql[@]}" -c "SELECT pid FROM pg_stat_activity WHERE application_name = '$1'
			AND state = 'idle in transaction'")
		[ -n "$pid" ] && break
		sleep 0.1
	done
	[ -n "$pid" ] || fail "$1: the session did not start"
	echo "$pid"
}

# A lease of alice's, expired; the owner revokes it in a transaction that
# stays open; bob waits past the pin grace: busy, and the revoker lives.
tok=$("${psql[@]}" -U alice -c "SELECT dlock.dlock_acquire('rp-revoked', '1 s')")
sleep 1.2
{ echo "BEGIN; SELECT revoked_token = $tok AS revoked FROM dlock.dlock_revoke('rp-revoked', wait => '1 s');"
  until_go revoker; echo "SELECT 'still here'; COMMIT;"; } |
	PGAPPNAME=rp-revoker psql -X -At -U dlock_owner -d dlock_sql_test >"$dir/revoker.out" 2>&1 &
rpid=$(session_pid rp-revoker)
got=$("${psql[@]}" -U bob -c "SELECT coalesce((dlock.dlock_acquire('rp-revoked', '1 min', wait => '1500 ms') > $tok)::text, 'busy')")
[ "$got" = busy ] || fail "the waiter got $got while the revoke was open, expected busy"
got=$("${psql[@]}" -c "SELECT count(*) FROM pg_stat_activity WHERE pid = $rpid")
[ "$got" = 1 ] || fail "the waiter ended the revoking session: $(cat "$dir/revoker.out")"
touch "$dir/go-revoker"
wait
grep -qx "still here" "$dir/revoker.out" || fail "the revoking session did not commit: $(cat "$dir/revoker.out")"
grep -qx t "$dir/revoker.out" || fail "the revoke did not revoke: $(cat "$dir/revoker.out")"
got=$("${psql[@]}" -U bob -c "SELECT dlock.dlock_acquire('rp-revoked', '1 min') > $tok")
[ "$got" = t ] || fail "no newer token after the revoke committed"
echo "revoke_pinning: revoker ok"

# A real pinner (alice's check, idle in its transaction) of an expired lease
# is still ended by the waiter past the pin grace while a revoke of
# another lease is open.
other=$("${psql[@]}" -U alice -c "SELECT dlock.dlock_acquire('rp-other', '1 min')")
{ echo "BEGIN; SELECT dlock.dlock_revoke('rp-other', wait => '1 s') IS NOT NULL;"; until_go revoker2; echo "COMMIT;"; } |
	PGAPPNAME=rp-revoker2 psql -X -At -U dlock_owner -d dlock_sql_test >"$dir/revoker2.out" 2>&1 &
rpid=$(session_pid rp-revoker2)
tok=$("${psql[@]}" -U alice -c "SELECT dlock.dlock_acquire('rp-pinned', '1 s')")
{ echo "BEGIN; SELECT dlock.dlock_check('rp-pinned', $tok);"; sleep 30; } |
	PGAPPNAME=rp-pinner psql -X -At -U alice -d dlock_sql_test >"$dir/pinner.out" 2>&1 &
ppid=$(session_pid rp-pinner)
got=$("${psql[@]}" -U bob -c "SELECT coalesce((dlock.dlock_acquire('rp-pinned', '1 min', wait => '10 s') > $tok)::text, 'busy')")
[ "$got" = true ] || fail "the waiter got $got behind a pinner, expected a newer token"
sleep 0.2
got=$("${psql[@]}" -c "SELECT count(*) FROM pg_stat_activity WHERE pid = $ppid")
[ "$got" = 0 ] || fail "the pinner was not ended"
got=$("${psql[@]}" -c "SELECT count(*) FROM pg_stat_activity WHERE pid = $rpid")
[ "$got" = 1 ] || fail "the waiter ended the session revoking another lease"
touch "$dir/go-revoker2"
echo "revoke_pinning: all passed"
