# Copyright (c) 2026, the dlock developers
# test/bench/callgrind.sh: sourced by instructions.sh and fence_instructions.sh.
# Makes a scratch cluster (initdb in a temporary directory, removed at exit
# unless DLOCK_KEEP is set; as root, it runs as the user postgres) and
# defines:
#   single [CMD...]   postgres --single on it (fsync off), run under CMD
#   collected         runs $work/in.sql under callgrind: the instructions it
#                     took, or a failure on its first ERROR ($work/out.log
#                     keeps the output)
#   per_run A B       thousands of instructions per run, from the counts of
#                     200 and 1,200 runs (startup taken out)
# Without valgrind it prints a line and exits 0.

if ! command -v valgrind >/dev/null; then
	echo "  valgrind is not installed: no instruction counts"
	exit 0
fi
bindir=$("${PG_CONFIG:-pg_config}" --bindir) || exit 1
work=$(mktemp -d)
trap '[ -n "${DLOCK_KEEP:-}" ] || rm -rf "$work"' EXIT
as=()
if [ "$(id -u)" = 0 ]; then
	chown postgres "$work"
	as=(runuser -u postgres --)
fi

single() {
	"${as[@]}" "$@" "$bindir/postgres" --single -D "$work/data" -c fsync=off \
		-c max_prepared_transactions=2 postgres
}

collected() {
	single valgrind --tool=callgrind --callgrind-out-file=/dev/null \
		<"$work/in.sql" >"$work/out.log" 2>"$work/vg.log"
	if grep -q ERROR "$work/out.log"; then
		grep -m1 ERROR "$work/out.log" >&2
		return 1
	fi
	sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$work/vg.log"
}

per_run() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) / 1000 / 1000 }'
}

"${as[@]}" "$bindir/initdb" -D "$work/data" -A trust >"$work/initdb.log" 2>&1 ||
	{ cat "$work/initdb.log" >&2; exit 1; }
