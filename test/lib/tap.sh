# Copyright (c) 2026, the dlock developers
# test/lib/tap.sh: the TAP helpers of the shell suites in test/scripts.
# Source it ('. "$top/test/lib/tap.sh"'); it defines
#   ok DESC                  one passing test
#   not_ok DESC [LINE...]    one failing test, with diagnostic lines
#   tap_done                 the plan "1..N"; true only if nothing failed
# and counts in n and failed.

n=0
failed=0

ok() {
	n=$((n + 1))
	echo "ok $n - $1"
}

not_ok() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $1"
	shift
	local line
	for line in "$@"; do
		printf '#   %s\n' "$line"
	done
}

tap_done() {
	echo "1..$n"
	[ "$failed" -eq 0 ]
}
