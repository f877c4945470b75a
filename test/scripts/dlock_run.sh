#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/scripts/dlock_run.sh: dlock-run, flock(1) for a fleet, end to end.
#
# test/run ("make check") runs this as the unprivileged test user, in the
# scratch copy of the repository where "make" has built bin/dlock-run,
# with PGHOST, PGPORT, PGUSER and PGDATABASE set for a throwaway cluster and
# PostgreSQL's bindir on PATH.  It creates and drops its own databases,
# prints TAP, takes about 50 seconds, and exits non-zero on any failure.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
RUN=${DLOCK_RUN:-$top/bin/dlock-run}
if [ ! -x "$RUN" ]; then
	echo "Bail out! $RUN is not built (run make first)"
	exit 1
fi

DB=dlock_run_$$
DB2=dlock_run_schema_$$
work=$(mktemp -d "${TMPDIR:-/tmp}/dlock-run-test.XXXXXX") || exit 1
pids=()

stopped_backend=
cleanup() {
	local p
	[ -n "$stopped_backend" ] && kill -CONT "$stopped_backend" 2>/dev/null
	for p in "${pids[@]}"; do
		kill -CONT "$p" 2>/dev/null
		kill -TERM "$p" 2>/dev/null
	done
	wait 2>/dev/null
	psql -X -q -d postgres -c "ALTER DATABASE $DB ALLOW_CONNECTIONS true" >/dev/null 2>&1
	dropdb --if-exists --force "$DB" >/dev/null 2>&1
	dropdb --if-exists --force "$DB2" >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT

# ---------------------------------------------------------------------------
# TAP helpers
# ---------------------------------------------------------------------------
. "$(cd "$(dirname "$0")/../lib" && pwd)/tap.sh"

# check DESC COMMAND...: ok if COMMAND succeeds.
check() {
	local desc=$1
	shift
	if "$@"; then ok "$desc"; else not_ok "$desc" "failed: $*"; fi
}

# is GOT WANT DESC
is() {
	if [ "$1" = "$2" ]; then ok "$3"; else not_ok "$3" "got:  '$1'" "want: '$2'"; fi
}

# diag FILE: show a file as TAP comments.
diag() { [ -e "$1" ] && sed 's/^/#   | /' "$1"; true; }

# ---------------------------------------------------------------------------
# Other helpers
# ---------------------------------------------------------------------------

# q [psql args]: psql for scripts, in the test database.
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$DB" "$@"; }

# Microseconds since the epoch, whatever the locale's decimal separator.
clock_us() { local t=${EPOCHREALTIME//[!0-9]/}; echo "$((10#$t))"; }

# await FILE SECONDS: wait for FILE to appear.
await() {
	local tenths=$(($2 * 10))
	while [ ! -e "$1" ]; do
		((tenths-- > 0)) || return 1
		sleep 0.1
	done
}

# alive PID: the process runs (a zombie does not count).
alive() {
	local s
	s=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	case $s in Z* | X* | '') return 1 ;; esac
	return 0
}

# gone PID SECONDS: the process ends within SECONDS.
gone() {
	local tenths=$(($2 * 10))
	while alive "$1"; do
		((tenths-- > 0)) || return 1
		sleep 0.1
	done
}

# group_gone PGID SECONDS: no process is left in process group PGID (the
# command leads its own group) within SECONDS.
group_gone() {
	local tenths=$(($2 * 10)) left
	for (( ; ; )); do
		left=$(ps -e -o pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/' | wc -l)
		[ "$left" -eq 0 ] && return 0
		((tenths-- > 0)) || return 1
		sleep 0.1
	done
}

# steal NAME: release the lease with its holder's token and take it for 30 s.
steal() {
	q -c "SELECT dlock_release('$1', token) FROM dlock_leases WHERE name = '$1'" \
		-c "SELECT dlock_acquire('$1', '30s')" >/dev/null
}

# held NAME: t or f, from dlock_leases.
held() { q -c "SELECT coalesce((SELECT held FROM dlock_leases WHERE name = '$1'), false)"; }

# start_bg OUT ERR COMMAND...: run COMMAND in the background; its pid in $bg.
start_bg() {
	local out=$1 err=$2
	shift 2
	"$@" >"$out" 2>"$err" &
	bg=$!
	pids+=("$bg")
}

# reap PID: wait for PID (a child of this shell); its exit status in $rc.
reap() {
	wait "$1"
	rc=$?
}

# ---------------------------------------------------------------------------
# Set-up
# ---------------------------------------------------------------------------
createdb "$DB" || { echo "Bail out! createdb $DB failed"; exit 1; }
. "$top/test/lib/install_dlock.sh"
install_dlock "$DB" || { echo "Bail out! installing dlock (edition ${DLOCK_EDITION:-c}) failed"; exit 1; }
export PGDATABASE=$DB
cd "$work" || exit 1

# A command that proves its token with dlock_assert and prints it.
cat >"$work/assert.sh" <<'EOF'
#!/bin/sh
psql -X -q -A -t -v ON_ERROR_STOP=1 -v name="$DLOCK_NAME" -v token="$DLOCK_TOKEN" <<'SQL'
SELECT dlock_assert(:'name', :token) \g /dev/null
SELECT 'asserted ' || :'name' || ' ' || :token;
SQL
EOF
chmod +x "$work/assert.sh"

version=$(sed -n "s/^default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p" "$top/dlock.control")

# ---------------------------------------------------------------------------
# Usage, --help, --version, connection failure
# ---------------------------------------------------------------------------
out=$("$RUN" --help 2>&1)
rc=$?
is "$rc" 0 "--help exits 0"
case $out in *"Usage:"*"--name=NAME"*"Exit status:"*) ok "--help prints the usage" ;;
	*) not_ok "--help prints the usage" "$out" ;; esac
is "$("$RUN" --version)" "dlock-run (dlock) $version" "--version prints the version from dlock.control"

"$RUN" --ttl 10s -- true 2>"$work/err"
is "$?" 64 "no --name: exit 64"
grep -q -- '--name is required' "$work/err" && grep -q 'Try "dlock-run --help"' "$work/err"
check "no --name: the message says so and points at --help" test $? -eq 0
"$RUN" --name u --ttl 10s 2>/dev/null
is "$?" 64 "no command: exit 64"
"$RUN" --name u --ttl 10s --bogus -- true 2>/dev/null
is "$?" 64 "unknown option: exit 64"
"$RUN" --name u --ttl 10s -E 300 -- true 2>/dev/null
is "$?" 64 "exit code out of range: exit 64"
"$RUN" --name u --ttl 'ten seconds' -- touch "$work/ran-bad-ttl" 2>"$work/err"
rc=$?
is "$rc" 64 "a DURATION the server cannot read: exit 64"
grep -q 'invalid value "ten seconds" for option --ttl' "$work/err"
check "a bad DURATION: the message names the option" test $? -eq 0
"$RUN" --name u --ttl 3s --renew-every 5s -- true 2>/dev/null
is "$?" 64 "--renew-every not shorter than --ttl: exit 64"
# between the TTL minus its margin (a tenth) and the TTL, every renewal
# would come after the local deadline: refused as well
"$RUN" --name u --ttl 10s --renew-every 9.5s -- touch "$work/ran-late-renew" 2>"$work/err"
is "$?" 64 "--renew-every past the TTL minus its safety margin: exit 64"
grep -q 'invalid value "9.5s" for option --renew-every' "$work/err" && test ! -e "$work/ran-late-renew"
check "--renew-every past the margin: the message names it, the command never ran" test $? -eq 0
"$RUN" --name "$(printf 'x%.0s' $(seq 300))" --ttl 3s -- touch "$work/ran-long-name" 2>/dev/null
is "$?" 64 "a name the server rejects (over 255 bytes): exit 64"
check "bad usage never runs the command" test ! -e "$work/ran-bad-ttl" -a ! -e "$work/ran-long-name"

"$RUN" -h "$work/no-such-dir" -p 1 --name u --ttl 10s -- touch "$work/ran-noconn" 2>"$work/err"
is "$?" 69 "connection failure: exit 69"
if grep -q "could not connect" "$work/err" && grep -q "$work/no-such-dir/.s.PGSQL.1" "$work/err"; then
	ok "connection failure: the message names the server it tried"
else
	not_ok "connection failure: the message names the server it tried" "$(cat "$work/err")"
fi
check "connection failure never runs the command" test ! -e "$work/ran-noconn"

# ---------------------------------------------------------------------------
# Running a command: status, environment, release
# ---------------------------------------------------------------------------
"$RUN" --name plain --ttl 10s -- sh -c 'exit 3'
is "$?" 3 "the command's exit status is dlock-run's"
is "$(held plain)" f "the lease is released when the command ends"
"$RUN" --name plain --ttl 10s -- sh -c 'kill -KILL $$'
is "$?" 137 "a command killed by signal 9: exit 137"
"$RUN" --name plain --ttl 10s -- "$work/no-such-command" 2>/dev/null
is "$?" 127 "a command that does not exist: exit 127"

out=$("$RUN" --name 'env test' --ttl 10s -- sh -c 'echo "$DLOCK_NAME|$DLOCK_TOKEN"')
token=$(q -c "SELECT token FROM dlock_leases WHERE name = 'env test'")
is "$out" "env test|$token" "DLOCK_NAME and DLOCK_TOKEN are the lease's name and token"
out=$("$RUN" --name 'assert me' --ttl 10s -- "$work/assert.sh" 2>&1)
rc=$?
token=$(q -c "SELECT token FROM dlock_leases WHERE name = 'assert me'")
is "$rc|$out" "0|asserted assert me $token" "the token in the environment passes dlock_assert"
q -c "SELECT dlock_assert('assert me', $token)" 2>"$work/err" >/dev/null
grep -q 'The lease was released' "$work/err"
check "after the command, that token is stale: the lease was released" test $? -eq 0

out=$("$RUN" --name owned --ttl 10s --owner 'cron@host-1' -- psql -X -A -t -c "SELECT owner FROM dlock_leases WHERE name = 'owned' AND held")
case $out in cron@host-1:[0-9]*:[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f])
	ok "--owner is stored with the lease, as LABEL:PID:RANDOM" ;;
	*) not_ok "--owner is stored with the lease, as LABEL:PID:RANDOM" "got: '$out'" ;; esac

# --min-hold (dlock 1.2): a command that ends at once still keeps the name
# from everybody until the minimum hold has passed.
"$RUN" --name minhold --ttl 30s --min-hold 20s -- true
is "$?" 0 "--min-hold: the command ran and ended"
is "$(q -c "SELECT held, available_at - acquired_at FROM dlock_leases WHERE name = 'minhold'")" \
	"f|00:00:20" "--min-hold: released, and unavailable until 20 s after the acquisition"
"$RUN" --name minhold --ttl 30s -- touch "$work/ran-minhold"
is "$?" 75 "--min-hold: a second run inside the minimum hold is busy, exit 75"
check "--min-hold: the second run's command did not run" test ! -e "$work/ran-minhold"
"$RUN" --name minhold2 --ttl 5s --min-hold 6s -- touch "$work/ran-minhold2" 2>"$work/minhold2.err"
is "$?" 64 "--min-hold longer than --ttl: refused by the server, exit 64"
check "--min-hold longer than --ttl: the command never ran" test ! -e "$work/ran-minhold2"

# Two runs with the same --owner never share the lease (dlock's owner
# renewal would hand the second the first's lease and token).
start_bg "$work/own1.out" "$work/own1.err" \
	"$RUN" --name sameowner --ttl 10s --owner 'cron@host-1' -- sh -c 'touch "$0"; exec sleep 30' "$work/own1.started"
p=$bg
await "$work/own1.started" 10
"$RUN" --name sameowner --ttl 10s --owner 'cron@host-1' -- touch "$work/ran-own2" 2>"$work/own2.err"
is "$?" 75 "a second run with the same --owner while the first holds the lease: busy, exit 75"
check "a second run with the same --owner: its command did not run" test ! -e "$work/ran-own2"
kill -TERM "$p"
reap "$p"

# ---------------------------------------------------------------------------
# Two (three) runners on one name run one after the other
# ---------------------------------------------------------------------------
runners=()
for i in 1 2 3; do
	"$RUN" --name serial --ttl 5s --wait 30s -- sh -c '
		s=$(date +%s%6N)
		sleep 0.4
		echo "$s $(date +%s%6N) $DLOCK_TOKEN" >"$1"' sh "$work/serial.$i" &
	runners+=($!)
	pids+=($!)
done
codes=""
for p in "${runners[@]}"; do
	reap "$p"
	codes="$codes$rc"
done
is "$codes" 000 "three runners on one name all run their commands"
sort -n "$work"/serial.* >"$work/serial.all" 2>/dev/null
overlap=$(awk 'NR > 1 && $1 < prev_end { print "command started at " $1 " before the previous one ended at " prev_end }
	NR > 1 && $3 <= prev_token { print "token " $3 " not above " prev_token }
	{ prev_end = $2; prev_token = $3 }
	END { if (NR != 3) print NR " commands ran, not 3" }' "$work/serial.all")
if [ -z "$overlap" ]; then
	ok "their commands ran one after the other (timestamps), with growing tokens"
else
	not_ok "their commands ran one after the other (timestamps), with growing tokens" "$overlap"
	diag "$work/serial.all"
fi

# A wait longer than the TTL: the lease is renewed (confirmed) before the
# command starts, and the command runs under it.
start_bg "$work/long1.out" "$work/long1.err" \
	"$RUN" --name longwait --ttl 1s -- sh -c 'touch "$0"; sleep 2' "$work/long1.started"
p=$bg
await "$work/long1.started" 10
"$RUN" --name longwait --ttl 1s --wait 10s -- "$work/assert.sh" >"$work/long2.out" 2>"$work/long2.err"
rc2=$?
reap "$p"
is "$rc|$rc2" "0|0" "a wait longer than the TTL: both run, the second after the first"
grep -q '^asserted longwait ' "$work/long2.out"
check "a wait longer than the TTL: the waiter's token passes dlock_assert" test $? -eq 0

# ---------------------------------------------------------------------------
# Busy
# ---------------------------------------------------------------------------
start_bg "$work/holder.out" "$work/holder.err" \
	"$RUN" --name busy --ttl 10s -- sh -c 'touch "$0"; exec sleep 30' "$work/holder.started"
holder=$bg
await "$work/holder.started" 10 || not_ok "the holder started" "$(cat "$work/holder.err")"

t0=$(clock_us)
"$RUN" --name busy --ttl 10s -- touch "$work/ran-busy"
rc=$?
t1=$(clock_us)
is "$rc" 75 "busy: exit 75 (EX_TEMPFAIL)"
check "busy: the command did not run" test ! -e "$work/ran-busy"
check "busy without --wait returns at once" test $((t1 - t0)) -lt 2000000
"$RUN" -E 3 --name busy --ttl 10s -- touch "$work/ran-busy"
is "$?" 3 "busy with -E 3: exit 3"
"$RUN" --conflict-exit-code 0 --name busy --ttl 10s -- touch "$work/ran-busy"
is "$?" 0 "busy with --conflict-exit-code 0: exit 0, like flock -E 0"
check "busy with -E: the command did not run" test ! -e "$work/ran-busy"
t0=$(clock_us)
"$RUN" --name busy --ttl 10s --wait 1s -- touch "$work/ran-busy"
rc=$?
t1=$(clock_us)
is "$rc" 75 "busy past --wait 1s: exit 75"
check "busy past --wait 1s: it waited about 1 s" test $((t1 - t0)) -ge 1000000 -a $((t1 - t0)) -lt 5000000

# interrupted while it waits: no command, 128+15
start_bg "$work/waiter.out" "$work/waiter.err" \
	"$RUN" --name busy --ttl 10s --wait 30s -- touch "$work/ran-waiter"
waiter=$bg
sleep 0.5
kill -TERM "$waiter"
reap "$waiter"
is "$rc" 143 "SIGTERM while waiting for the lease: exit 143"
check "SIGTERM while waiting: the command never ran" test ! -e "$work/ran-waiter"

kill -TERM "$holder"
reap "$holder"
is "$rc" 143 "SIGTERM to the holder: its command dies of it, exit 143"
is "$(held busy)" f "and the holder released the lease"

# ---------------------------------------------------------------------------
# Signals are forwarded
# ---------------------------------------------------------------------------
start_bg "$work/term.out" "$work/term.err" \
	"$RUN" --name sig --ttl 10s -- sh -c '
		trap "echo TERM >\"$0.got\"; exit 7" TERM
		touch "$0"; sleep 30 & wait' "$work/term.started"
p=$bg
await "$work/term.started" 10
kill -TERM "$p"
reap "$p"
is "$rc" 7 "SIGTERM is forwarded: the command's trap ran and its status is dlock-run's"
check "SIGTERM is forwarded: the command saw it" test -e "$work/term.started.got"
is "$(held sig)" f "after a forwarded signal the lease is released"

# A background job of a script ignores SIGINT; run dlock-run as if from a terminal.
start_bg "$work/int.out" "$work/int.err" env --default-signal=INT \
	"$RUN" --name sig --ttl 10s -- sh -c '
		trap "echo INT >\"$0.got\"; exit 8" INT
		touch "$0"; sleep 30 & wait' "$work/int.started"
p=$bg
await "$work/int.started" 10
kill -INT "$p"
reap "$p"
is "$rc" 8 "SIGINT is forwarded: the command's trap ran and its status is dlock-run's"
check "SIGINT is forwarded: the command saw it" test -e "$work/int.started.got"

# Processes the command leaves behind are ended before the lease is released.
"$RUN" --name left --ttl 10s -- sh -c 'sleep 30 & echo $! >"$0"' "$work/left.pid" 2>"$work/err"
rc=$?
is "$rc" 0 "a command that leaves a background process: its own status"
check "the process it left behind was ended" gone "$(cat "$work/left.pid")" 3
grep -q 'left processes running' "$work/err"
check "and dlock-run said so" test $? -eq 0

# More processes left behind than descriptors for pidfds (RLIMIT_NOFILE 24,
# hard, so dlock-run cannot raise it): each is tracked by its pid, none is
# taken for gone, and all get --signal at once (not SIGKILL --kill-after
# later, when the first ones' descriptors are free again).
t0=$(clock_us)
(
	ulimit -n 24
	"$RUN" --name fds --ttl 5s -k 5s -- sh -c 'for i in $(seq 40); do sleep "$0" & done; exit 0' "31.$$"
) 2>"$work/fds.err"
rc=$?
t1=$(clock_us)
is "$rc|$(pgrep -c -x -f "sleep 31[.]$$")" "0|0" "more leftovers than descriptors: exit 0, none left running"
if [ $((t1 - t0)) -lt 4000000 ] && ! grep -q 'sending SIGKILL' "$work/fds.err"; then
	ok "more leftovers than descriptors: all got SIGTERM at once, no SIGKILL needed"
else
	not_ok "more leftovers than descriptors: all got SIGTERM at once, no SIGKILL needed" \
		"took $(((t1 - t0) / 1000)) ms" "$(cut -c1-300 "$work/fds.err")"
fi

# dlock-run killed outright: the command gets the lease-lost signal (Linux).
start_bg "$work/k9.out" "$work/k9.err" \
	"$RUN" --name k9 --ttl 10s -- sh -c 'echo $$ >"$0"; exec sleep 30' "$work/k9.pid"
p=$bg
await "$work/k9.pid" 10
kill -KILL "$p"
wait "$p" 2>/dev/null
check "SIGKILL to dlock-run: its command does not run on" gone "$(cat "$work/k9.pid")" 3

# ... even a command that ignores SIGTERM: it gets SIGKILL (PR_SET_PDEATHSIG).
start_bg "$work/k9t.out" "$work/k9t.err" \
	"$RUN" --name k9t --ttl 10s -- sh -c 'trap "" TERM; echo $$ >"$0"; while :; do sleep 0.1; done' "$work/k9t.pid"
p=$bg
await "$work/k9t.pid" 10
kill -KILL "$p"
wait "$p" 2>/dev/null
check "SIGKILL to dlock-run: a command that ignores SIGTERM gets SIGKILL" gone "$(cat "$work/k9t.pid")" 3

# ---------------------------------------------------------------------------
# The lease lost while the command runs
# ---------------------------------------------------------------------------

# Stolen: released with its token and taken by someone else.
start_bg "$work/steal.out" "$work/steal.err" \
	"$RUN" --name steal --ttl 2s -- sh -c 'sleep 30 & echo $! >"$0.child"; echo $$ >"$0"; wait' "$work/steal.pid"
p=$bg
await "$work/steal.pid" 10
await "$work/steal.pid.child" 10
thief=$(q -c "SELECT dlock_release('steal', token) FROM dlock_leases WHERE name = 'steal'" \
	-c "SELECT dlock_acquire('steal', '30s')")
thief=${thief##*$'\n'}
t0=$(clock_us)
reap "$p"
t1=$(clock_us)
is "$rc" 70 "lease stolen: exit 70"
check "lease stolen: noticed at the next renewal (within 2 s)" test $((t1 - t0)) -lt 2000000
check "lease stolen: the command was killed" gone "$(cat "$work/steal.pid")" 2
check "lease stolen: the command's own child was killed too" gone "$(cat "$work/steal.pid.child")" 2
if grep -q 'lost the lease on "steal"' "$work/steal.err" && grep -q 'sending SIGTERM' "$work/steal.err"; then
	ok "lease stolen: reported on stderr"
else
	not_ok "lease stolen: reported on stderr" "$(cat "$work/steal.err")"
fi
is "$(q -c "SELECT held AND token = $thief FROM dlock_leases WHERE name = 'steal'")" t \
	"lease stolen: the new holder keeps it"

# ---------------------------------------------------------------------------
# Processes that run as another user (sudo, su, a setuid program) cannot be
# signalled by dlock-run; they are still found, named and waited for.
# This needs a setuid-root setpriv(1) (a stand-in for sudo): the test user
# cannot make one, so "make check" skips this unless one is given in
# DLOCK_TEST_SETUID_SETPRIV (made by root: cp /usr/bin/setpriv X; chmod
# 4755 X) or "sudo -n -u nobody" works.
# ---------------------------------------------------------------------------
asother=()
if [ "$(id -u)" -ne 0 ] && [ -n "${DLOCK_TEST_SETUID_SETPRIV:-}" ] && [ -u "$DLOCK_TEST_SETUID_SETPRIV" ]; then
	asother=("$DLOCK_TEST_SETUID_SETPRIV" --reuid=nobody)
elif [ "$(id -u)" -ne 0 ] && sudo -n -u nobody true 2>/dev/null; then
	asother=(sudo -n -u nobody)
fi
if [ ${#asother[@]} -eq 0 ]; then
	for t in "another user's descendant: the lease is kept while it runs" \
		"another user's descendant: named with its user" \
		"another user's descendant: dlock-run exits with the command's status after it ends" \
		"the command as another user, lease lost: dlock-run does not hang" \
		"the command as another user, lease lost: exit 70" \
		"the command as another user, lease lost: says it could not stop it, and who"; do
		ok "$t # SKIP no setuid helper (run as root, or set DLOCK_TEST_SETUID_SETPRIV)"
	done
else
	# the command leaves a process running as nobody, and exits
	start_bg "$work/suid1.out" "$work/suid1.err" \
		"$RUN" --name suid1 --ttl 2s -k 1s -- sh -c '"$@" sleep 5 & exit 3' sh "${asother[@]}"
	p=$bg
	sleep 3
	is "$(held suid1)" t "another user's descendant: the lease is kept while it runs"
	if grep -q 'pid [0-9]* (sleep, user nobody)' "$work/suid1.err"; then
		ok "another user's descendant: named with its user"
	else
		not_ok "another user's descendant: named with its user" "$(cat "$work/suid1.err")"
	fi
	gone "$p" 10
	reap "$p"
	is "$rc|$(held suid1)" "3|f" "another user's descendant: dlock-run exits with the command's status after it ends"

	# the command itself runs as nobody; the lease is stolen
	start_bg "$work/suid2.out" "$work/suid2.err" \
		"$RUN" --name suid2 --ttl 2s -k 1s -- "${asother[@]}" sleep 8
	p=$bg
	sleep 1
	steal suid2
	check "the command as another user, lease lost: dlock-run does not hang" gone "$p" 4
	reap "$p"
	is "$rc" 70 "the command as another user, lease lost: exit 70"
	if grep -q 'could not stop pid [0-9]* (sleep, user nobody)' "$work/suid2.err" &&
		! grep -q 'no process it started is left' "$work/suid2.err"; then
		ok "the command as another user, lease lost: says it could not stop it, and who"
	else
		not_ok "the command as another user, lease lost: says it could not stop it, and who" "$(cat "$work/suid2.err")"
	fi
fi

# Expired: dlock-run stalls (SIGSTOP) past the TTL; someone else runs meanwhile.
start_bg "$work/stall.out" "$work/stall.err" \
	"$RUN" --name stall --ttl 1s -- sh -c 'echo $$ >"$0"; exec sleep 30' "$work/stall.pid"
p=$bg
await "$work/stall.pid" 10
kill -STOP "$p"
"$RUN" --name stall --ttl 5s --wait 5s -- touch "$work/stall.second"
is "$?" 0 "while the first holder stalls, its lease expires and a second runner takes it"
kill -CONT "$p"
reap "$p"
is "$rc" 70 "lease expired during a stall: exit 70"
check "lease expired during a stall: the command was killed" gone "$(cat "$work/stall.pid")" 2
grep -q 'lost the lease on "stall"' "$work/stall.err"
check "lease expired during a stall: reported on stderr" test $? -eq 0

# Stopped alone (kill -STOP of dlock-run's pid, not of the job) past the
# deadline: its watchdog ends the command while dlock-run is still stopped,
# before the lease expires on the server; continued, dlock-run reports the
# loss (exit 70) and the watchdog ends with it.
start_bg "$work/watch.out" "$work/watch.err" \
	"$RUN" --name watch --ttl 2s -- bash -c 'echo $$ >"$0"; while :; do echo "$EPOCHREALTIME" >>"$0.beat"; sleep 0.05; done' "$work/watch.pid"
p=$bg
await "$work/watch.pid" 10
watcher=$(ps -o pid=,comm= --ppid "$p" | awk '$2 == "dlock-run-watch" { print $1 }')
kill -STOP "$p"
gone "$(cat "$work/watch.pid")" 6
is "$?" 0 "dlock-run stopped alone past the deadline: its watchdog ends the command while dlock-run is stopped"
last_beat=$(grep . "$work/watch.pid.beat" | tail -n 1 | sed "s/,/./")
watch_expiry=$(q -c "SELECT extract(epoch FROM expires_at) FROM dlock_leases WHERE name = 'watch'")
kill -CONT "$p"
reap "$p"
is "$rc" 70 "dlock-run stopped alone past the deadline: exit 70 once continued"
if awk -v b="$last_beat" -v e="$watch_expiry" 'BEGIN { exit !(b != "" && e != "" && b + 0 < e + 0) }'; then
	ok "dlock-run stopped alone: the command's last write came before the lease expired on the server"
else
	not_ok "dlock-run stopped alone: the command's last write came before the lease expired on the server" \
		"last write $last_beat, expiry $watch_expiry"
fi
if grep -q 'its watchdog sent SIGTERM' "$work/watch.err" && grep -q 'lost the lease on "watch"' "$work/watch.err"; then
	ok "dlock-run stopped alone: the watchdog's action and the loss are reported"
else
	not_ok "dlock-run stopped alone: the watchdog's action and the loss are reported" "$(cat "$work/watch.err")"
fi
if [ -n "$watcher" ] && gone "$watcher" 2; then
	ok "dlock-run stopped alone: the watchdog ($watcher) ends with dlock-run"
else
	not_ok "dlock-run stopped alone: the watchdog ends with dlock-run" "watchdog pid: '${watcher}'"
fi

# The lease lost while dlock-run runs: dlock-run stops the command itself
# (which ignores --signal here, so SIGKILL ends it --kill-after later, past
# the lease's old deadline); its watchdog does not signal a second time nor
# claim a stall.
printf '%s\n' '#!/bin/bash' 'trap '"'"'echo TERM >>"$1.terms"'"'"' TERM' \
	'echo $$ >"$1"' 'while :; do sleep 0.1; done' >"$work/once.sh"
chmod +x "$work/once.sh"
start_bg "$work/once.out" "$work/once.err" "$RUN" --name once --ttl 3s -k 5s -- "$work/once.sh" "$work/once.pid"
p=$bg
await "$work/once.pid" 10
steal once
reap "$p"
is "$rc|$(cat "$work/once.pid.terms" 2>/dev/null | wc -l)" "70|1" \
	"a lease lost while dlock-run runs: exit 70, the command gets --signal once"
if grep -q 'watchdog' "$work/once.err"; then
	not_ok "a lease lost while dlock-run runs: the watchdog stays quiet" "$(cat "$work/once.err")"
else
	ok "a lease lost while dlock-run runs: the watchdog stays quiet"
fi

# An exec'd dlock-run inherits a child of the shell it replaced: that child
# is not the command's, and is neither waited for nor signalled.
sh -c 'sleep 6 & echo $! >"$0"; exec "$1" --name earlier --ttl 3s -- true' "$work/earlier.pid" "$RUN" \
	2>"$work/earlier.err"
rc=$?
if [ "$rc" -eq 0 ] && alive "$(cat "$work/earlier.pid")" && ! grep -q 'left processes running' "$work/earlier.err"; then
	ok "an exec'd dlock-run leaves the children it inherited alone"
else
	not_ok "an exec'd dlock-run leaves the children it inherited alone" "rc $rc" "$(cat "$work/earlier.err")"
fi
kill "$(cat "$work/earlier.pid")" 2>/dev/null

# A lease-lost signal that ends nothing is refused; so are too few
# descriptors to find the command's processes with.
"$RUN" --name badsig -s STOP --ttl 3s -- true 2>"$work/badsig.err"
is "$?" 64 "--signal STOP is refused (usage error): it does not end a process"
(ulimit -n 10; "$RUN" --name fewfds --ttl 3s -- true 2>"$work/fewfds.err")
is "$?" 71 "ulimit -n 10: refused, exit 71 (too few descriptors to find the command's processes, fewer than 20)"

# Database unreachable for longer than the TTL.
start_bg "$work/down.out" "$work/down.err" \
	"$RUN" --name down --ttl 2s -- sh -c 'echo $$ >"$0"; exec sleep 30' "$work/down.pid"
p=$bg
await "$work/down.pid" 10
psql -X -q -d postgres -v ON_ERROR_STOP=1 \
	-c "ALTER DATABASE $DB ALLOW_CONNECTIONS false" \
	-c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '$DB' AND application_name = 'dlock-run'" >/dev/null
t0=$(clock_us)
reap "$p"
t1=$(clock_us)
psql -X -q -d postgres -c "ALTER DATABASE $DB ALLOW_CONNECTIONS true" >/dev/null
is "$rc" 70 "database unreachable past the TTL: exit 70"
check "database unreachable: gave up within the TTL" test $((t1 - t0)) -lt 2500000
check "database unreachable: the command was killed" gone "$(cat "$work/down.pid")" 2
if grep -q 'could not renew' "$work/down.err" && grep -q 'no renewal succeeded before its deadline' "$work/down.err"; then
	ok "database unreachable: reported on stderr"
else
	not_ok "database unreachable: reported on stderr" "$(cat "$work/down.err")"
fi

# A dropped connection that comes back in time is no loss.
start_bg "$work/blip.out" "$work/blip.err" \
	"$RUN" --name blip --ttl 2s -- sh -c 'touch "$0"; sleep 2.5' "$work/blip.started"
p=$bg
await "$work/blip.started" 10
psql -X -q -d postgres -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '$DB' AND application_name = 'dlock-run'" >/dev/null
reap "$p"
is "$rc" 0 "a dropped connection: dlock-run reconnects, renews, and the command finishes"
grep -q 'renewed the lease on "blip" again' "$work/blip.err"
check "a dropped connection: the recovery is reported" test $? -eq 0
is "$(held blip)" f "a dropped connection: the lease is released at the end"

# The command ends while a renewal goes unanswered (dlock-run's backend
# stopped: a black hole that keeps the socket open): that renewal is
# abandoned at once and the lease released on a new connection, instead of
# waiting out the renewal (up to --renew-every) first.
start_bg "$work/inflight.out" "$work/inflight.err" \
	"$RUN" --name inflight --ttl 60s --renew-every 5s -- sh -c 'touch "$0"; sleep 6' "$work/inflight.started"
p=$bg
await "$work/inflight.started" 10
sleep 0.5
stopped_backend=$(q -c "SELECT pid FROM pg_stat_activity WHERE datname = '$DB' AND application_name = 'dlock-run'")
kill -STOP "$stopped_backend"
t0=$(clock_us)
reap "$p"
t1=$(clock_us)
kill -CONT "$stopped_backend"
stopped_backend=
is "$rc|$(held inflight)" "0|f" "the command ended during an unanswered renewal: exit 0, the lease released"
check "the command ended during an unanswered renewal: dlock-run did not wait it out" \
	test $((t1 - t0)) -lt 7800000
echo "# the command ended during an unanswered renewal: dlock-run exited $(((t1 - t0) / 1000)) ms after the stop (the command ran 5.5 s more)"

# A connection attempt that blocks inside libpq (a stalled host name lookup
# does, in getaddrinfo; here an LD_PRELOAD shim makes connect() block while
# a file exists): the lease's deadline still holds, the command is stopped.
cat >"$work/lpstall.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
int
connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	int			(*real) (int, const struct sockaddr *, socklen_t) = dlsym(RTLD_NEXT, "connect");
	const char *f = getenv("DLOCK_TEST_STALL_FILE");

	while (f != NULL && access(f, F_OK) == 0)
		usleep(20000);
	return real(fd, addr, len);
}
EOF
if cc -shared -fPIC -o "$work/lpstall.so" "$work/lpstall.c" -ldl 2>"$work/lpstall.cc"; then
	start_bg "$work/lpstall.out" "$work/lpstall.err" \
		env LD_PRELOAD="$work/lpstall.so" DLOCK_TEST_STALL_FILE="$work/lpstall.on" \
		"$RUN" --name lpstall --ttl 2s -- sh -c 'echo $$ >"$0"; exec sleep 30' "$work/lpstall.pid"
	p=$bg
	await "$work/lpstall.pid" 10
	touch "$work/lpstall.on"
	psql -X -q -d postgres -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '$DB' AND application_name = 'dlock-run'" >/dev/null
	t0=$(clock_us)
	gone "$p" 8
	t1=$(clock_us)
	rm -f "$work/lpstall.on"
	reap "$p"
	is "$rc" 70 "a reconnect blocked inside libpq: exit 70"
	[ "$rc" = 70 ] || diag "$work/lpstall.err"
	check "a reconnect blocked inside libpq: the deadline held (stopped within 4 s)" test $((t1 - t0)) -lt 4000000
	check "a reconnect blocked inside libpq: the command was stopped" gone "$(cat "$work/lpstall.pid")" 2
	echo "# a reconnect blocked inside libpq: dlock-run exited $(((t1 - t0) / 1000)) ms after the connection broke (--ttl 2s)"
else
	for t in "exit 70" "the deadline held (stopped within 4 s)" "the command was stopped"; do
		ok "a reconnect blocked inside libpq: $t # SKIP no C compiler for the shim"
	done
fi

# --signal and --kill-after: a command that ignores SIGTERM is killed.
start_bg "$work/stub.out" "$work/stub.err" \
	"$RUN" --name stubborn --ttl 2s -k 1s -- sh -c 'trap "" TERM; echo $$ >"$0"; exec sleep 30' "$work/stub.pid"
p=$bg
await "$work/stub.pid" 10
q -c "SELECT dlock_release('stubborn', token) FROM dlock_leases WHERE name = 'stubborn'" >/dev/null
reap "$p"
is "$rc" 70 "a command that ignores SIGTERM: exit 70"
check "a command that ignores SIGTERM: killed after --kill-after" gone "$(cat "$work/stub.pid")" 1
grep -q 'sending SIGKILL' "$work/stub.err"
check "a command that ignores SIGTERM: SIGKILL is reported" test $? -eq 0

start_bg "$work/sint.out" "$work/sint.err" env --default-signal=INT \
	"$RUN" --name sigint --ttl 2s --signal INT -- sh -c '
		trap "echo INT >\"$0.got\"; exit 0" INT
		touch "$0"; while :; do sleep 0.1; done' "$work/sint.started"
p=$bg
await "$work/sint.started" 10
q -c "SELECT dlock_release('sigint', token) FROM dlock_leases WHERE name = 'sigint'" >/dev/null
reap "$p"
is "$rc" 70 "--signal INT: exit 70 even though the command exits 0"
check "--signal INT: the command got SIGINT" test -e "$work/sint.started.got"
start_bg "$work/code.out" "$work/code.err" \
	"$RUN" --name lost-code --ttl 2s --lost-exit-code 99 -- sh -c 'touch "$0"; exec sleep 30' "$work/code.started"
p=$bg
await "$work/code.started" 10
q -c "SELECT dlock_release('lost-code', token) FROM dlock_leases WHERE name = 'lost-code'" >/dev/null
reap "$p"
is "$rc" 99 "--lost-exit-code 99: exit 99"

# --foreground: the command stays in dlock-run's process group, and is
# still signalled when the lease is lost.
start_bg "$work/fg.out" "$work/fg.err" \
	"$RUN" --foreground --name fg --ttl 2s -- sh -c 'echo $$ >"$0"; exec sleep 30' "$work/fg.pid"
p=$bg
await "$work/fg.pid" 10
is "$(ps -o pgid= -p "$(cat "$work/fg.pid")" | tr -d ' ')" "$(ps -o pgid= -p "$p" | tr -d ' ')" \
	"--foreground: the command shares dlock-run's process group"
q -c "SELECT dlock_release('fg', token) FROM dlock_leases WHERE name = 'fg'" >/dev/null
reap "$p"
is "$rc" 70 "--foreground: lease lost, exit 70"
check "--foreground: the command was killed" gone "$(cat "$work/fg.pid")" 2


# ---------------------------------------------------------------------------
# Failing closed: stalls, pipes, closed descriptors, signals
# ---------------------------------------------------------------------------

# Stalled past the TTL (SIGSTOP); another runner takes the lease; the
# command finishes during the stall.  After SIGCONT: exit 70, not 0.
start_bg "$work/stall2.out" "$work/stall2.err" \
	"$RUN" --name stall2 --ttl 1s -- sh -c 'echo $$ >"$0"; sleep 1.5' "$work/stall2.pid"
p=$bg
await "$work/stall2.pid" 10
kill -STOP "$p"
"$RUN" --name stall2 --ttl 5s --wait 5s -- touch "$work/stall2.second"
rc2=$?
gone "$(cat "$work/stall2.pid")" 5
sleep 0.3
kill -CONT "$p"
reap "$p"
is "$rc2|$rc" "0|70" "stalled past the TTL, taken over, the command finished during the stall: exit 70"
if grep -q 'lost the lease on "stall2"' "$work/stall2.err"; then
	ok "stalled past the TTL: the lost lease is reported"
else
	not_ok "stalled past the TTL: the lost lease is reported" "$(cat "$work/stall2.err")"
fi
check "stalled past the TTL: no process left in the command's group" group_gone "$(cat "$work/stall2.pid")" 2

# A stall shorter than the deadline: the lease is confirmed with the server
# at once, the command runs on and its status is dlock-run's.
start_bg "$work/nap.out" "$work/nap.err" \
	"$RUN" --name nap --ttl 30s -- sh -c 'touch "$0"; sleep 3' "$work/nap.started"
p=$bg
await "$work/nap.started" 10
kill -STOP "$p"
sleep 2
kill -CONT "$p"
reap "$p"
is "$rc" 0 "a stall within the deadline: the command's own status"
grep -q 'stalled for' "$work/nap.err"
check "a stall within the deadline: noticed and confirmed with the server" test $? -eq 0

# --renew-every 0: the command is stopped when the TTL runs out (just
# before: it gets SIGTERM before the lease's expiry on the server).  The
# trap notes the time with a shell builtin: a process it started would be a
# new descendant, and get the signal too.
cat >"$work/norenew.sh" <<'EOF'
#!/bin/bash
echo $$ >"$1"
trap 'echo "$EPOCHREALTIME" >"$1.term"; exit 1' TERM
sleep 30 &
wait
EOF
chmod +x "$work/norenew.sh"
"$RUN" --name norenew --ttl 4s --renew-every 0 -- "$work/norenew.sh" "$work/norenew.pid" 2>"$work/norenew.err"
rc=$?
is "$rc" 70 "--renew-every 0 and a command that outlives the TTL: exit 70"
is "$(psql -X -A -t -c "SELECT extract(epoch FROM expires_at) > $(cat "$work/norenew.pid.term" 2>/dev/null || echo 'NULL') FROM dlock_leases WHERE name = 'norenew'")" t \
	"--renew-every 0: the command was stopped before the TTL ran out on the server"
check "--renew-every 0: no process left in the command's group" group_gone "$(cat "$work/norenew.pid")" 2
grep -q 'TTL ran out' "$work/norenew.err"
check "--renew-every 0: reported on stderr" test $? -eq 0
"$RUN" --name norenew2 --ttl 3s --renew-every 0 -- sh -c 'sleep 0.5'
is "$?" 0 "--renew-every 0 and a command that ends within the TTL: its own status"

# stderr is a pipe whose reader has gone; the lease is taken over; the
# command ignores SIGTERM.  Exit 70, not 141; the command killed after -k.
mkfifo "$work/errpipe"
cat "$work/errpipe" >/dev/null &
reader=$!
"$RUN" -v --name pipe --ttl 2s -k 1s -- sh -c 'trap "" TERM; echo $$ >"$0"; exec sleep 30' \
	"$work/pipe.pid" >/dev/null 2>"$work/errpipe" &
p=$!
pids+=("$p")
await "$work/pipe.pid" 10
kill "$reader"
wait "$reader" 2>/dev/null
steal pipe
t0=$(clock_us)
reap "$p"
t1=$(clock_us)
is "$rc" 70 "stderr a pipe without a reader, lease taken over: exit 70 (not 141)"
check "stderr without a reader: the command that ignores SIGTERM was killed after -k" \
	test $((t1 - t0)) -ge 900000 -a $((t1 - t0)) -lt 4000000
check "stderr without a reader: no process left in the command's group" group_gone "$(cat "$work/pipe.pid")" 2

# stderr (and stdout) closed, with -v: the command runs.
"$RUN" -v --name closed --ttl 5s -- sh -c 'echo ran >"$0"' "$work/closed.ran" 2>&-
is "$?" 0 "stderr closed with -v: exit 0"
check "stderr closed with -v: the command ran" test -e "$work/closed.ran"
"$RUN" -v --name closed --ttl 5s -- sh -c 'echo ran >"$0"' "$work/closed2.ran" >&- 2>&-
is "$?" 0 "stdout and stderr closed with -v: exit 0"
check "stdout and stderr closed with -v: the command ran" test -e "$work/closed2.ran"
"$RUN" -v --name closed --ttl 2s -- sh -c 'echo $$ >"$0"; exec sleep 30' "$work/closed3.pid" >&- 2>&- &
p=$!
pids+=("$p")
await "$work/closed3.pid" 10
steal closed
reap "$p"
is "$rc" 70 "stderr closed, lease taken over: exit 70"
check "stderr closed, lease taken over: no process left" group_gone "$(cat "$work/closed3.pid")" 2

# Every forwarded signal reaches the command.
for sig in HUP QUIT; do
	start_bg "$work/fw$sig.out" "$work/fw$sig.err" env --default-signal=$sig \
		"$RUN" --name "fw$sig" --ttl 10s -- sh -c '
			trap "echo got >\"$0.got\"; exit 9" '"$sig"'
			echo $$ >"$0"; sleep 30 & wait' "$work/fw$sig.pid"
	p=$bg
	await "$work/fw$sig.pid" 10
	kill -"$sig" "$p"
	reap "$p"
	is "$rc" 9 "SIG$sig is forwarded: the command's trap ran and its status is dlock-run's"
	check "SIG$sig is forwarded: no process left in the command's group" \
		group_gone "$(cat "$work/fw$sig.pid")" 2
	is "$(held "fw$sig")" f "SIG$sig is forwarded: the lease is released"
done

# The lease taken over while the command runs, before any renewal: the
# release says false, and the exit status is 70 although the command succeeded.
start_bg "$work/late.out" "$work/late.err" \
	"$RUN" --name late --ttl 30s -- sh -c 'touch "$0"; sleep 1' "$work/late.started"
p=$bg
await "$work/late.started" 10
steal late
reap "$p"
is "$rc" 70 "the lease taken over before the release: exit 70 though the command exited 0"
grep -q 'was lost before the command ended' "$work/late.err"
check "the lease taken over before the release: reported on stderr" test $? -eq 0

# ---------------------------------------------------------------------------
# Every descendant is the command: other process groups, other sessions
# ---------------------------------------------------------------------------

# loop.sh FILE: what a job's worker does: write FILE every 50 ms (a
# nanosecond timestamp), its pid in FILE.pid.
cat >"$work/loop.sh" <<'EOF'
#!/bin/sh
echo $$ >"$1.pid"
while :; do date +%s%N >"$1.tmp" && mv -f "$1.tmp" "$1"; sleep 0.05; done
EOF
chmod +x "$work/loop.sh"

# last_write FILE: the timestamp (ns) of the loop's last write.
last_write() { cat "$1" 2>/dev/null || echo 0; }

# quiet FILE: FILE does not change for a second (the loop is stopped or gone).
quiet() {
	local before
	before=$(last_write "$1")
	sleep 1
	[ "$(last_write "$1")" = "$before" ]
}

# state PID: the process state letter (R, S, T, Z, ...), or "gone".
state() { sed -n 's/.*) \(.\).*/\1/p' "/proc/$1/stat" 2>/dev/null || echo gone; }

# await_state PID STATE SECONDS: the process reaches STATE within SECONDS.
# (A stop signal reaches a process in uninterruptible sleep, D, when its
# system call returns: under I/O load that took over 5 s in a CI run, so a
# wait for T is given 15 s at least.)
await_state() {
	local secs=$3
	[ "$2" = T ] && [ "$secs" -lt 15 ] && secs=15
	local tenths=$((secs * 10))
	while [ "$(state "$1")" != "$2" ]; do
		((tenths-- > 0)) || return 1
		sleep 0.1
	done
}

# Lost while a grandchild runs in a process group of its own (coreutils
# timeout moves itself into one) or in a session of its own (setsid).
for how in timeout setsid; do
	case $how in
		timeout) cmd='timeout 120 "$0" "$1"' ;;
		setsid) cmd='setsid "$0" "$1" & wait' ;;
	esac
	f=$work/lost-$how
	start_bg "$f.out" "$f.err" "$RUN" --name "lost-$how" --ttl 3s -- sh -c "$cmd" "$work/loop.sh" "$f"
	p=$bg
	await "$f.pid" 10 && await "$f" 10
	t0=$(date +%s%N)
	steal "lost-$how"
	reap "$p"
	t1=$(date +%s%N)
	is "$rc" 70 "lost, $how grandchild: exit 70"
	if ! alive "$(cat "$f.pid")"; then
		ok "lost, $how grandchild: it is gone when dlock-run exits"
	else
		not_ok "lost, $how grandchild: it is gone when dlock-run exits" "$(cat "$f.err")"
		kill -KILL "$(cat "$f.pid")" 2>/dev/null
	fi
	check "lost, $how grandchild: its work stopped" quiet "$f"
	echo "# lost, $how grandchild: the work stopped $(( ($(last_write "$f") - t0) / 1000000 )) ms after the loss, dlock-run exited after $(( (t1 - t0) / 1000000 )) ms (--ttl 3s: renewals every 1 s)"
done

# The command exits (0) and leaves a grandchild in another group or session:
# it is stopped before the lease is released, and the message names it.
for how in timeout setsid; do
	case $how in
		timeout) cmd='timeout 120 "$0" "$1" & sleep 0.5; exit 0' ;;
		setsid) cmd='setsid "$0" "$1" & sleep 0.5; exit 0' ;;
	esac
	f=$work/left-$how
	"$RUN" --name "left-$how" --ttl 10s -- sh -c "$cmd" "$work/loop.sh" "$f" 2>"$f.err"
	rc=$?
	held_after=$(held "left-$how")
	is "$rc|$held_after" "0|f" "the command exits 0 leaving a $how grandchild: exit 0, lease released"
	if ! alive "$(cat "$f.pid")"; then
		ok "the command leaves a $how grandchild: it is gone when dlock-run exits"
	else
		not_ok "the command leaves a $how grandchild: it is gone when dlock-run exits" "$(cat "$f.err")"
		kill -KILL "$(cat "$f.pid")" 2>/dev/null
	fi
	if grep -q "left processes running: .*pid $(cat "$f.pid") (loop.sh)" "$f.err"; then
		ok "the command leaves a $how grandchild: the message names it"
	else
		not_ok "the command leaves a $how grandchild: the message names it" "$(cat "$f.err")"
	fi
done

# A grandchild in a session of its own that ignores SIGTERM gets SIGKILL
# after -k, though it is in no process group dlock-run knows of.
f=$work/stubborn-gc
start_bg "$f.out" "$f.err" "$RUN" --name stubborn-gc --ttl 3s -k 1s -- \
	sh -c 'setsid sh -c '\''trap "" TERM; exec "$0" "$1"'\'' "$0" "$1" & wait' "$work/loop.sh" "$f"
p=$bg
await "$f.pid" 10 && await "$f" 10
steal stubborn-gc
reap "$p"
is "$rc" 70 "lost, a setsid grandchild that ignores SIGTERM: exit 70"
if ! alive "$(cat "$f.pid")" && grep -q 'sending SIGKILL' "$f.err"; then
	ok "lost, a setsid grandchild that ignores SIGTERM: SIGKILL after -k, gone when dlock-run exits"
else
	not_ok "lost, a setsid grandchild that ignores SIGTERM: SIGKILL after -k, gone when dlock-run exits" "$(cat "$f.err")"
	kill -KILL "$(cat "$f.pid")" 2>/dev/null
fi
grep -q 'systemd-run, docker, ssh, at' "$f.err"
check "lost: the message says what dlock-run cannot reach" test $? -eq 0

# ---------------------------------------------------------------------------
# Ctrl-Z at a terminal (a real pty): the whole job stops, and goes on only
# once the lease is confirmed
# ---------------------------------------------------------------------------
# ptyjob.py CTL OUT ERR COMMAND...: run COMMAND as the foreground job of a new
# pty (stdout, stderr to files); its pid in CTL.pid; ^Z is typed on the
# terminal each time CTL.z appears; COMMAND's exit status ends in CTL.rc.
cat >"$work/ptyjob.py" <<'EOF'
import os, pty, select, sys
ctl, out, err = sys.argv[1:4]
pid, fd = pty.fork()
if pid == 0:
    os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 1)
    os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
    os.execvp(sys.argv[4], sys.argv[4:])
with open(ctl + ".pid", "w") as f:
    f.write("%d\n" % pid)
while True:
    if os.path.exists(ctl + ".z"):
        os.remove(ctl + ".z")
        os.write(fd, b"\x1a")
    if select.select([fd], [], [], 0.05)[0]:
        try:
            os.read(fd, 1024)
        except OSError:
            pass
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        rc = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
        with open(ctl + ".rc", "w") as f:
            f.write("%d\n" % rc)
        break
EOF

# ptyrun CTL COMMAND...: start ptyjob.py in the background; dlock-run's pid in $bg.
ptyrun() {
	local ctl=$1
	shift
	"$PY" "$work/ptyjob.py" "$ctl" "$ctl.out" "$ctl.err" "$@" &
	pids+=($!)
	await "$ctl.pid" 10
	bg=$(cat "$ctl.pid")
	pids+=("$bg")
}

# Debian's python3 (as in python_client.sh), not one on the caller's PATH.
PY=${DLOCK_PYTHON:-/usr/bin/python3}
if "$PY" -c 'import pty' 2>/dev/null; then
	# ^Z, the database unreachable while the job is stopped, SIGCONT: the
	# grandchild stays stopped until the lease is confirmed.
	c=$work/tstp
	ptyrun "$c" "$RUN" -v --name tstp --ttl 20s -- sh -c 'timeout 120 "$0" "$1"' "$work/loop.sh" "$c.f"
	p=$bg
	await "$c.f.pid" 10 && await "$c.f" 10
	gc=$(cat "$c.f.pid")
	pids+=("$gc")
	touch "$c.z"
	check "^Z: the command's grandchild (another process group) is stopped" await_state "$gc" T 5
	check "^Z: dlock-run itself is stopped" await_state "$p" T 5
	check "^Z: the grandchild's work stopped" quiet "$c.f"
	psql -X -q -d postgres -v ON_ERROR_STOP=1 \
		-c "ALTER DATABASE $DB ALLOW_CONNECTIONS false" \
		-c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '$DB' AND application_name = 'dlock-run'" >/dev/null
	kill -CONT "$p"
	sleep 2
	check "SIGCONT with the server unreachable: the grandchild stays stopped (no lease check yet)" await_state "$gc" T 15
	psql -X -q -d postgres -c "ALTER DATABASE $DB ALLOW_CONNECTIONS true" >/dev/null
	if await_state "$gc" S 10 || [ "$(state "$gc")" = R ]; then
		ok "the lease confirmed with the server: the grandchild goes on"
	else
		not_ok "the lease confirmed with the server: the grandchild goes on" "state $(state "$gc")" "$(cat "$c.err")"
	fi
	if ! quiet "$c.f"; then ok "the grandchild's work goes on"; else not_ok "the grandchild's work goes on"; fi
	renewed=$(grep -n 'renewed the lease on "tstp"' "$c.err" | head -1 | cut -d: -f1)
	continued=$(grep -n 'continued [0-9]* process' "$c.err" | head -1 | cut -d: -f1)
	if [ -n "$renewed" ] && [ -n "$continued" ] && [ "$renewed" -lt "$continued" ]; then
		ok "the command was continued after the renewal, not before"
	else
		not_ok "the command was continued after the renewal, not before" "$(cat "$c.err")"
	fi
	kill -TERM "$p"
	await "$c.rc" 15
	check "after SIGTERM, nothing of the job is left" gone "$gc" 3

	# ^Z, the lease taken over while the job is stopped, SIGCONT: the
	# command is killed, never continued.
	c=$work/tstp2
	ptyrun "$c" "$RUN" --name tstp2 --ttl 20s -- sh -c 'timeout 120 "$0" "$1"' "$work/loop.sh" "$c.f"
	p=$bg
	await "$c.f.pid" 10 && await "$c.f" 10
	gc=$(cat "$c.f.pid")
	pids+=("$gc")
	touch "$c.z"
	await_state "$gc" T 5 && await_state "$p" T 5
	check "^Z again: the job is stopped" test "$(state "$gc")$(state "$p")" = TT
	steal tstp2
	before=$(last_write "$c.f")
	t0=$(date +%s%N)
	kill -CONT "$p"
	await "$c.rc" 10
	t1=$(date +%s%N)
	is "$(cat "$c.rc" 2>/dev/null)" 70 "lost while stopped: exit 70"
	is "$(last_write "$c.f")" "$before" "lost while stopped: the grandchild never went on with its work"
	check "lost while stopped: the grandchild is gone" gone "$gc" 1
	grep -q 'while the command was stopped' "$c.err"
	check "lost while stopped: reported on stderr" test $? -eq 0
	echo "# lost while stopped: dlock-run exited $(( (t1 - t0) / 1000000 )) ms after SIGCONT"

	# --foreground: the shell's SIGCONT goes to the whole process group,
	# the command included; dlock-run stops it again, and the grandchild in
	# a group of its own stays stopped, until the lease is confirmed.
	c=$work/tstp3
	ptyrun "$c" "$RUN" -v --foreground --name tstp3 --ttl 20s -- \
		sh -c 'echo $$ >"$1.sh"; timeout 120 "$0" "$1"' "$work/loop.sh" "$c.f"
	p=$bg
	await "$c.f.pid" 10 && await "$c.f" 10
	gc=$(cat "$c.f.pid")
	cmd=$(cat "$c.f.sh")
	pids+=("$gc")
	touch "$c.z"
	await_state "$gc" T 5 && await_state "$p" T 5
	check "--foreground, ^Z: the job is stopped" test "$(state "$gc")$(state "$p")" = TT
	psql -X -q -d postgres -v ON_ERROR_STOP=1 \
		-c "ALTER DATABASE $DB ALLOW_CONNECTIONS false" \
		-c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '$DB' AND application_name = 'dlock-run'" >/dev/null
	kill -CONT -- "-$p"
	sleep 2
	await_state "$cmd" T 15 && await_state "$gc" T 15
	is "$(state "$cmd")$(state "$gc")" TT \
		"--foreground, SIGCONT to the group with the server unreachable: the command and its grandchild are stopped"
	psql -X -q -d postgres -c "ALTER DATABASE $DB ALLOW_CONNECTIONS true" >/dev/null
	if await_state "$gc" S 10 || [ "$(state "$gc")" = R ]; then
		ok "--foreground: the lease confirmed, the grandchild goes on"
	else
		not_ok "--foreground: the lease confirmed, the grandchild goes on" "state $(state "$gc")" "$(cat "$c.err")"
	fi
	kill -TERM "$p"
	await "$c.rc" 15
	check "--foreground: after SIGTERM, nothing of the job is left" gone "$gc" 3
else
	ok "^Z at a terminal # SKIP $PY has no pty module"
fi

# ---------------------------------------------------------------------------
# Busy: who holds the lease, and until when
# ---------------------------------------------------------------------------
start_bg "$work/who.out" "$work/who.err" \
	"$RUN" --name who --ttl 30s --owner 'cron@host-1' -- sh -c 'touch "$0"; exec sleep 30' "$work/who.started"
p=$bg
await "$work/who.started" 10
"$RUN" -v --name who --ttl 10s -- true 2>"$work/who2.err"
rc=$?
is "$rc" 75 "busy with -v: exit 75"
if grep -Eq "lock \"who\" is busy: held by role $(q -c 'SELECT current_user') \\(owner \"cron@host-1:[0-9]+:[0-9a-f]{12}\"\\) until 2[0-9-]+ [0-9:.]+.* \\([0-9.]+ s from now\\)" "$work/who2.err"; then
	ok "busy with -v: the message names the holder's role, owner and expiry"
else
	not_ok "busy with -v: the message names the holder's role, owner and expiry" "$(cat "$work/who2.err")"
fi
kill -TERM "$p"
reap "$p"

# SIGCHLD ignored by dlock-run's parent: dlock-run still sees its command end
# (were SIGCHLD left ignored, it would wait for ever: timeout(1) ends that).
timeout -k 2 20 env --ignore-signal=CHLD "$RUN" --name chld --ttl 10s -- sh -c 'exit 3'
is "$?" 3 "SIGCHLD ignored at start: the command's exit status is still dlock-run's"

# The exit statuses are documented where users look.
out=$("$RUN" --help)
case $out in *"70 "*"lost"*"75 "*"busy"*"64 "*"usage"*"69 "*) ok "--help lists the exit statuses" ;;
	*) not_ok "--help lists the exit statuses" "$out" ;; esac
if command -v man >/dev/null; then
	out=$(MANWIDTH=80 MANPAGER=cat man -l "$top/bin/dlock-run.1" 2>&1)
	case $out in *"EXIT STATUS"*"70"*"75"*"64"*"69"*) ok "the man page renders, with the exit statuses" ;;
		*) not_ok "the man page renders, with the exit statuses" "$out" ;; esac
else
	ok "the man page renders # SKIP man is not installed"
fi

# ---------------------------------------------------------------------------
# dlock installed in another schema
# ---------------------------------------------------------------------------
createdb "$DB2" && install_dlock "$DB2" "lock s"
"$RUN" -d "$DB2" --name sch --ttl 5s -- true 2>"$work/err"
is "$?" 69 "dlock outside search_path: exit 69"
grep -q 'use --schema' "$work/err"
check "dlock outside search_path: the hint names --schema" test $? -eq 0
"$RUN" -d "dbname=$DB2" --schema 'lock s' --name sch --ttl 5s -- sh -c 'test -n "$DLOCK_TOKEN"'
is "$?" 0 "--schema 'lock s' (and a connection string in -d) finds it"

tap_done
