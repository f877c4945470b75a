# Copyright (c) 2026, the dlock developers
# test/lib/pg_copy.sh: a copy of a PostgreSQL installation without dlock's
# files.  Source it; it defines
#   copy_installation_without_dlock PG_CONFIG DIR
# which copies the programs, the loadable modules but dlock's and the share
# directory but dlock's control file and scripts into DIR, laid out as the
# original below their common prefix (the programs find their share and
# lib directories relative to themselves), and sets ibin, ilib and ishare
# to the copy's bin, lib and share directories; and
#   start_copy_server WORK [INITDB OPTION ...]
# which makes a cluster of the copy in WORK/data (socket in WORK/sock, set
# as sock; PGUSER and PGPORT from the caller) and starts it: its status is
# pg_ctl's.  A failed initdb is the caller's TAP test "initdb of the copy",
# not ok, and ends the script (the caller defines not_ok and tap_done).

copy_installation_without_dlock() {
	local pg_config=$1 inst=$2 bindir pkglibdir sharedir prefix f
	bindir=$("$pg_config" --bindir)
	pkglibdir=$("$pg_config" --pkglibdir)
	sharedir=$("$pg_config" --sharedir)
	prefix=$bindir
	while [ "${pkglibdir#"$prefix"/}" = "$pkglibdir" ] || [ "${sharedir#"$prefix"/}" = "$sharedir" ]; do
		prefix=$(dirname "$prefix")
	done
	ibin=$inst/${bindir#"$prefix"/}
	ilib=$inst/${pkglibdir#"$prefix"/}
	ishare=$inst/${sharedir#"$prefix"/}
	mkdir -p "$ibin" "$ilib" "$(dirname "$ishare")"
	cp -a "$bindir"/. "$ibin"/
	for f in "$pkglibdir"/*.so; do
		case $(basename "$f") in dlock*) ;; *) cp -a "$f" "$ilib"/ ;; esac
	done
	cp -a "$sharedir" "$ishare"
	rm -f "$ishare"/extension/dlock.control "$ishare"/extension/dlock--*.sql
}

start_copy_server() {
	local work=$1
	shift
	sock=$work/sock
	mkdir -p "$sock"
	"$ibin/initdb" -A trust -U "$PGUSER" "$@" "$work/data" >"$work/initdb.log" 2>&1 ||
		{ not_ok "initdb of the copy" "$(tail -n 20 "$work/initdb.log")"; tap_done; exit 1; }
	cat >>"$work/data/postgresql.conf" <<-EOF
		listen_addresses = ''
		unix_socket_directories = '$sock'
		port = $PGPORT
		fsync = off
	EOF
	"$ibin/pg_ctl" -D "$work/data" -l "$work/server.log" -w start >/dev/null 2>&1
}
