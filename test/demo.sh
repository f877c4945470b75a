#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/demo.sh: the scripted scene behind "make demo".
#
# Three application replicas (background bash processes, each talking to the
# database with psql) share one PostgreSQL database with dlock installed:
#
#   Scene 1  a job lock: all three go for "nightly-job" at the same moment;
#            exactly one gets a token and runs the job, the others skip it.
#   Scene 2  leader election: every replica calls
#            dlock_acquire('leader', '3s', '0', <its name>) about once a
#            second; the leader keeps its token, then dies, and another
#            replica takes over with a higher token once the lease runs out.
#   Scene 3  fencing: a ledger guarded by the dlock_fence() trigger rejects
#            (SQLSTATE LK001) the write of a replica that stalled past its
#            lease while another replica took over.
#
# test/run starts a throwaway cluster and runs this script with PGHOST,
# PGPORT, PGUSER and PGDATABASE set and PostgreSQL's bindir on PATH.  It
# (re)creates its own database, $DLOCK_DEMO_DB (default dlock_demo), in that
# cluster.  It takes about 16 seconds, prints what happens as it happens, and
# exits non-zero if anything does not go as narrated.
set -uo pipefail

DB=${DLOCK_DEMO_DB:-dlock_demo}
REPLICAS=(replica-a replica-b replica-c)

work=$(mktemp -d "${TMPDIR:-/tmp}/dlock-demo.XXXXXX") || exit 1
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	rm -rf "$work"
}
trap cleanup EXIT

# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

# Microseconds since the epoch, whatever the locale's decimal separator.
clock_us() { local t=${EPOCHREALTIME//[!0-9]/}; echo "$((10#$t))"; }
t0=$(clock_us)

# "1.234" seconds from a number of microseconds.
secs() { printf '%d.%01d' "$(($1 / 1000000))" "$((($1 / 100000) % 10))"; }

# say WHO TEXT: one narrated line, stamped with the time since the start.
say() {
	local who=$1 us
	shift
	us=$(($(clock_us) - t0))
	printf '%5ss  %-11s %s\n' "$(secs "$us")" "[$who]" "$*"
}

fail() {
	printf '\ndemo FAILED: %s\n' "$*" >&2
	exit 1
}

# q [psql args]: psql for scripts (no psqlrc, unaligned, tuples only,
# stop at the first error).
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }

# await FILE SECONDS [PID]: wait for FILE to appear; false on timeout, or
# as soon as process PID (the one that should write FILE) has exited.
await() {
	local file=$1 tenths=$(($2 * 10)) pid=${3:-}
	while [ ! -e "$file" ]; do
		((tenths-- > 0)) || return 1
		[ -z "$pid" ] || kill -0 "$pid" 2>/dev/null || [ -e "$file" ] || return 1
		sleep 0.1
	done
}

# Publish a value atomically: readers see the whole file or none of it.
publish() { printf '%s\n' "$2" >"$1.tmp" && mv "$1.tmp" "$1"; }

# The lines of a replica's output that are not errors, for error messages.
oneline() { tr '\n' ' ' <<<"$1"; }

banner() { printf '\n== %s\n' "$*"; }

# ---------------------------------------------------------------------------
# Set-up: a fresh database with the extension
# ---------------------------------------------------------------------------
command -v psql >/dev/null || fail "psql is not on PATH"

banner "Set-up"
PGOPTIONS='-c client_min_messages=warning' q -c "DROP DATABASE IF EXISTS \"$DB\" WITH (FORCE)" -c "CREATE DATABASE \"$DB\"" ||
	fail "cannot create database $DB"
export PGDATABASE=$DB
q -c "CREATE EXTENSION dlock" || fail "CREATE EXTENSION dlock failed"
say demo "database $DB created; CREATE EXTENSION dlock (version $(q -c "SELECT extversion FROM pg_extension WHERE extname = 'dlock'"))"
say demo "replicas: ${REPLICAS[*]} (one psql connection per call, like a stateless app)"

# ---------------------------------------------------------------------------
# Scene 1: one nightly job, three replicas, one winner
# ---------------------------------------------------------------------------

# A replica connects, waits at the starting line (inside its psql session,
# so that the three calls reach the server together), then tries the lock.
scene1_replica() {
	local me=$1 out tok other rel
	out=$(PGAPPNAME=$me q 2>&1 <<-EOF
		\! touch '$work/s1-ready-$me'; while [ ! -e '$work/s1-go' ]; do sleep 0.005; done
		SELECT dlock_acquire('nightly-job', '30s');
	EOF
	) || {
		say "$me" "ERROR: $(oneline "$out")"
		publish "$work/s1-result-$me" error
		exit 1
	}
	tok=$out
	if [ -z "$tok" ]; then
		publish "$work/s1-result-$me" busy
		say "$me" "acquire nightly-job -> NULL: busy, another replica runs it; skipping"
		exit 0
	fi
	publish "$work/s1-result-$me" "$tok"
	say "$me" "acquire nightly-job -> token $tok: I won, running the job (3s)"
	sleep 3
	# Finish only once the others have tried: each of them must have found
	# the lock busy, whatever the speed of the machine.
	for other in "${REPLICAS[@]}"; do
		await "$work/s1-result-$other" 60 || {
			say "$me" "ERROR: $other never tried"
			exit 1
		}
	done
	rel=$(PGAPPNAME=$me q -c "SELECT dlock_release('nightly-job', $tok)" 2>&1)
	if [ "$rel" != t ]; then
		say "$me" "ERROR: dlock_release('nightly-job', $tok) -> $(oneline "$rel")"
		exit 1
	fi
	say "$me" "job done: release nightly-job, token $tok -> true"
}

banner "Scene 1: three replicas want to run the nightly job, at the same moment"
say demo "each replica: SELECT dlock_acquire('nightly-job', '30s');  -- token, or NULL if busy"
for r in "${REPLICAS[@]}"; do
	scene1_replica "$r" &
	pids+=($!)
done
for i in "${!REPLICAS[@]}"; do
	await "$work/s1-ready-${REPLICAS[$i]}" 30 "${pids[$i]}" ||
		fail "scene 1: ${REPLICAS[$i]} did not connect"
done
say demo "all three connected; go!"
touch "$work/s1-go"
s1_failed=0
for p in "${pids[@]}"; do
	wait "$p" || s1_failed=1
done
pids=()
[ "$s1_failed" -eq 0 ] || fail "scene 1: a replica failed"

winner=
winner_token=
busy=0
for r in "${REPLICAS[@]}"; do
	res=$(cat "$work/s1-result-$r" 2>/dev/null)
	case $res in
		busy) busy=$((busy + 1)) ;;
		'' | error) fail "scene 1: $r has no result" ;;
		*)
			[ -z "$winner" ] || fail "scene 1: both $winner and $r got the lock"
			winner=$r
			winner_token=$res
			;;
	esac
done
[ -n "$winner" ] && [ "$busy" -eq 2 ] ||
	fail "scene 1: expected one winner and two busy replicas"
held=$(q -c "SELECT held FROM dlock_leases WHERE name = 'nightly-job'")
[ "$held" = f ] || fail "scene 1: nightly-job is still held after the release"
say demo "scene 1 OK: exactly one winner ($winner, token $winner_token), two skipped, lock free again"

# ---------------------------------------------------------------------------
# Scene 2: leader election with owners
# ---------------------------------------------------------------------------

# nap STOPFILE...: sleep about a second, less if a stop file appears.
nap() {
	local i f
	for i in 1 2 3 4 5 6 7 8 9 10; do
		for f in "$@"; do
			[ -e "$f" ] && return 0
		done
		sleep 0.1
	done
}

# Every second: try to become (or stay) the leader.  Each round is logged
# to s2-rounds-NAME as "TOKEN BEFORE AFTER" ("-" for the token when busy),
# with the times just before and just after the call, in microseconds.
scene2_replica() {
	local me=$1 prev= seen= out tok holder before
	local stop=$work/s2-stop-$me stop_all=$work/s2-stop-all
	while :; do
		if [ -e "$stop" ]; then
			say "$me" "CRASH: stops calling dlock_acquire, never releases; its lease runs out 3s after its last renewal"
			publish "$work/s2-dead-$me" "$(clock_us)"
			exit 0
		fi
		[ -e "$stop_all" ] && exit 0
		before=$(clock_us)
		out=$(PGAPPNAME=$me q -c "SELECT dlock_acquire('leader', '3s', '0', '$me')" \
			-c "SELECT owner FROM dlock_leases WHERE name = 'leader' AND held" 2>&1) || {
			say "$me" "ERROR: $(oneline "$out")"
			exit 1
		}
		{
			IFS= read -r tok
			IFS= read -r holder
		} <<<"$out"
		if [ -n "$tok" ]; then
			printf '%s %s %s\n' "$tok" "$before" "$(clock_us)" >>"$work/s2-rounds-$me"
			if [ "$tok" = "$prev" ]; then
				say "$me" "acquire leader -> token $tok again: renewed, still the leader"
			else
				say "$me" "acquire leader -> token $tok: I am the leader now"
			fi
			seen=$me
		else
			printf -- '- %s %s\n' "$before" "$(clock_us)" >>"$work/s2-rounds-$me"
			[ -n "$prev" ] && say "$me" "acquire leader -> NULL: I lost the leadership"
			if [ "${holder:-?}" != "$seen" ]; then
				say "$me" "acquire leader -> NULL: ${holder:-another replica} leads, I follow"
				seen=${holder:-?}
			fi
		fi
		prev=$tok
		nap "$stop" "$stop_all"
	done
}

# Tokens a replica got, one a line (empty if it never led).
s2_tokens() { awk '$1 != "-" { print $1 }' "$work/s2-rounds-$1" 2>/dev/null; }
s2_lead_rounds() { s2_tokens "$1" | wc -l; }

# s2_wait_leader SECONDS MIN_ROUNDS CANDIDATE...: print the first
# CANDIDATE seen to have led for at least MIN_ROUNDS rounds.
s2_wait_leader() {
	local tenths=$(($1 * 10)) min=$2 r
	shift 2
	while ((tenths-- > 0)); do
		for r in "$@"; do
			if [ "$(s2_lead_rounds "$r")" -ge "$min" ]; then
				echo "$r"
				return 0
			fi
		done
		sleep 0.1
	done
	return 1
}

banner "Scene 2: leader election; every second each replica calls dlock_acquire('leader', '3s', '0', <own name>)"
# They start a moment apart, as replicas of a deployment do.
for r in "${REPLICAS[@]}"; do
	scene2_replica "$r" &
	pids+=($!)
	sleep 0.3
done
declare -A s2_pid
for i in "${!REPLICAS[@]}"; do
	s2_pid[${REPLICAS[$i]}]=${pids[$i]}
done

# One leader, renewed four times with the same token, nobody else leading.
leader=$(s2_wait_leader 20 5 "${REPLICAS[@]}") || fail "scene 2: no replica led for 5 rounds"
leader_token=$(s2_tokens "$leader" | sort -u)
[ "$(wc -l <<<"$leader_token")" -eq 1 ] ||
	fail "scene 2: $leader changed tokens while leading: $(oneline "$leader_token")"
for r in "${REPLICAS[@]}"; do
	[ "$r" = "$leader" ] && continue
	[ -z "$(s2_tokens "$r")" ] || fail "scene 2: $r also got a token while $leader led"
done
say demo "$leader kept token $leader_token for 5 rounds (owner renewal); now it dies"

touch "$work/s2-stop-$leader"
wait "${s2_pid[$leader]}" || fail "scene 2: $leader failed"
# Just before its last renewal: the lease ran out 3s after that at the earliest.
last_renewal=$(awk '$1 != "-" { t = $2 } END { print t }' "$work/s2-rounds-$leader")
death=$(cat "$work/s2-dead-$leader")

# Another replica takes over once the lease has run out.
others=()
for r in "${REPLICAS[@]}"; do
	[ "$r" = "$leader" ] || others+=("$r")
done
successor=$(s2_wait_leader 15 1 "${others[@]}") || fail "scene 2: nobody took over from $leader"
successor_token=$(s2_tokens "$successor" | head -n 1)
[ "$successor_token" -gt "$leader_token" ] ||
	fail "scene 2: $successor took over with token $successor_token, not above $leader_token"
# Just after the call that took over.
takeover=$(awk '$1 != "-" { print $3; exit }' "$work/s2-rounds-$successor")
since_renewal=$((takeover - last_renewal))
[ "$since_renewal" -ge 3000000 ] ||
	fail "scene 2: $successor took over $(secs "$since_renewal")s after $leader's last renewal, before its 3s lease ran out"
say demo "$successor took over $(secs $((takeover - death)))s after $leader died ($(secs "$since_renewal")s after its last renewal), token $successor_token > $leader_token"

# The new leader renews too; then everybody stops.
s2_wait_leader 10 3 "$successor" >/dev/null || fail "scene 2: $successor did not keep leading"
touch "$work/s2-stop-all"
s2_failed=0
for r in "${REPLICAS[@]}"; do
	[ "$r" = "$leader" ] || wait "${s2_pid[$r]}" || s2_failed=1
done
pids=()
[ "$s2_failed" -eq 0 ] || fail "scene 2: a replica failed"
[ "$(s2_tokens "$successor" | sort -u)" = "$successor_token" ] ||
	fail "scene 2: $successor changed tokens while leading"
for r in "${REPLICAS[@]}"; do
	[ "$r" = "$leader" ] || [ "$r" = "$successor" ] || [ -z "$(s2_tokens "$r")" ] ||
		fail "scene 2: $r got a token too"
done
[ "$(q -c "SELECT owner || ' ' || token FROM dlock_leases WHERE name = 'leader' AND held")" = "$successor $successor_token" ] ||
	fail "scene 2: the leases view does not show $successor holding leader"
say demo "scene 2 OK: one leader at a time, same token while renewing, higher token after the takeover"
say demo "SELECT * FROM dlock_leases:"
psql -X -q -P pager=off -P footer=off -c "
	SELECT name, owner, token, held,
	       to_char(acquired_at, 'HH24:MI:SS.MS') AS acquired_at,
	       to_char(expires_at, 'HH24:MI:SS.MS') AS expires_at,
	       to_char(released_at, 'HH24:MI:SS.MS') AS released_at
	  FROM dlock_leases ORDER BY token" | sed '/^$/d; s/ *$//; s/^/        /' ||
	fail "scene 2: cannot read dlock_leases"

# ---------------------------------------------------------------------------
# Scene 3: fencing tokens stop a stale writer
# ---------------------------------------------------------------------------
banner "Scene 3: fencing; the payout ledger only takes rows carrying the current 'payout' token"
q <<-'EOF' || fail "scene 3: cannot create the ledger"
	CREATE TABLE ledger (
		id      int GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		replica text NOT NULL,
		amount  numeric NOT NULL,
		token   bigint NOT NULL
	);
	CREATE TRIGGER ledger_fence BEFORE INSERT OR UPDATE OR DELETE ON ledger
		FOR EACH ROW EXECUTE FUNCTION dlock_fence('payout', 'token');
EOF
say demo "CREATE TRIGGER ledger_fence BEFORE INSERT OR UPDATE OR DELETE ON ledger"
say demo "    FOR EACH ROW EXECUTE FUNCTION dlock_fence('payout', 'token');"

# Replica A: takes a 1s lease, writes, stalls for 2s, writes again.
scene3_replica_a() {
	local me=replica-a out tok state
	# One session, so that the first write follows the acquire at once.
	out=$(PGAPPNAME=$me q 2>&1 <<-EOF
		SELECT dlock_acquire('payout', '1s') AS token \gset
		\echo :token
		INSERT INTO ledger (replica, amount, token) VALUES ('$me', 100, :token);
	EOF
	) || {
		say "$me" "ERROR: $(oneline "$out")"
		exit 1
	}
	tok=$out
	say "$me" "acquire payout (ttl 1s) -> token $tok"
	say "$me" "INSERT INTO ledger (amount 100, token $tok) -> accepted"
	publish "$work/s3-a-token" "$tok"
	say "$me" "stalls: a 2s GC pause, longer than its 1s lease"
	sleep 2
	# Wake up only after B has taken over, however slow the machine.
	await "$work/s3-b-done" 60 || {
		say "$me" "ERROR: replica-b never wrote"
		exit 1
	}
	say "$me" "wakes up, still thinks it holds payout: INSERT INTO ledger (amount 100, token $tok) ..."
	out=$(PGAPPNAME=$me psql -X -q -v VERBOSITY=default \
		-c "INSERT INTO ledger (replica, amount, token) VALUES ('$me', 100, $tok)" \
		-c '\echo SQLSTATE :SQLSTATE' 2>&1)
	state=$(sed -n 's/^SQLSTATE //p' <<<"$out")
	sed '/^SQLSTATE /d; s/^/                        /' <<<"$out"
	if [ "$state" != LK001 ]; then
		say "$me" "ERROR: the stale write was not rejected with LK001 (SQLSTATE $state)"
		exit 1
	fi
	say "$me" "rejected by the database with SQLSTATE $state: its stale write never landed"
}

scene3_replica_a &
pids+=($!)
await "$work/s3-a-token" 30 "${pids[0]}" || fail "scene 3: replica-a did not write"
a_token=$(cat "$work/s3-a-token")

# Replica B: waits for the lease (A's runs out after 1s), then writes.
me=replica-b
say "$me" "acquire payout (ttl 10s, waiting up to 5s) ..."
start=$(clock_us)
b_token=$(PGAPPNAME=$me q -c "SELECT dlock_acquire('payout', '10s', '5s')" 2>&1) ||
	fail "scene 3: $me: $(oneline "$b_token")"
waited=$(($(clock_us) - start))
[ -n "$b_token" ] || fail "scene 3: $me did not get payout within 5s"
[ "$b_token" -gt "$a_token" ] || fail "scene 3: $me got token $b_token, not above $a_token"
say "$me" "... -> token $b_token after $(secs "$waited")s: replica-a's lease has expired"
out=$(PGAPPNAME=$me q -c "INSERT INTO ledger (replica, amount, token) VALUES ('$me', 100, $b_token)" 2>&1) ||
	fail "scene 3: $me could not write: $(oneline "$out")"
say "$me" "INSERT INTO ledger (amount 100, token $b_token) -> accepted"
touch "$work/s3-b-done"

wait "${pids[0]}" || fail "scene 3: replica-a's stale write was not rejected as narrated"
pids=()
rows=$(q -F ' ' -c "SELECT replica, token FROM ledger ORDER BY id")
[ "$rows" = "replica-a $a_token"$'\n'"$me $b_token" ] ||
	fail "scene 3: unexpected ledger rows: $(oneline "$rows")"
rel=$(PGAPPNAME=$me q -c "SELECT dlock_release('payout', $b_token)")
[ "$rel" = t ] || fail "scene 3: $me could not release payout"
say "$me" "release payout, token $b_token -> true"
say demo "scene 3 OK: SELECT * FROM ledger holds only the accepted rows:"
psql -X -q -P pager=off -P footer=off -c "SELECT * FROM ledger ORDER BY id" | sed '/^$/d; s/ *$//; s/^/        /' ||
	fail "scene 3: cannot read the ledger"

echo
say demo "demo finished"
