# Copyright (c) 2026, the dlock developers
# src/sql/include.awk: prints a script with each line "-- @include FILE"
# replaced by FILE (a path from the top of the tree), so that one text
# serves both editions (the Makefile, for the C edition's update script).
# Fails on a file it cannot read or an empty one.
/^-- @include [^ ]+$/ {
	f = $3
	if ((getline line < f) <= 0) {
		print "include.awk: cannot read " f > "/dev/stderr"
		failed = 1
		exit 1
	}
	do
		print line
	while ((getline line < f) > 0)
	close(f)
	next
}
{ print }
END { if (failed) exit 1 }
