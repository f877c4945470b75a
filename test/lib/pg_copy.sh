# Copyright (c) 2026, the dlock developers
# test/lib/pg_copy.sh: a copy of a PostgreSQL installation without dlock's
# files.  Source it; it defines
#   copy_installation_without_dlock PG_CONFIG DIR
# which copies the programs, the loadable modules but dlock's and the share
# directory but dlock's control file and scripts into DIR, laid out as the
# original below their common prefix (the programs find their share and
# lib directories relative to themselves), and sets ibin, ilib and ishare
# to the copy's bin, lib and share directories.

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
