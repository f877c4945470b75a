# Copyright (c) 2026, the dlock developers
# test/lib/DlockCatalog.pm: compare the dlock objects of two databases.
#
# catalog_facts() runs test/catalog.sql (one line per fact about every
# object of the extension, found through the catalogs) in a database;
# catalogs_match() compares two databases, fails on any difference and
# prints it, line by line, as "-" (only in the expected database) and "+"
# (only in the other).
package DlockCatalog;

use strict;
use warnings;

use File::Basename qw(dirname);
use File::Spec;
use Test::More;

use Exporter 'import';
our @EXPORT = qw(catalog_facts catalogs_match);

my $catalog_sql =
  File::Spec->catfile(dirname(__FILE__), File::Spec->updir, 'catalog.sql');

# The facts, as a list of lines.
sub catalog_facts
{
	my ($node, $db) = @_;
	open(my $fh, '<', $catalog_sql) or die "cannot open $catalog_sql: $!";
	my $query = do { local $/; <$fh> };
	close $fh;
	my $out = $node->safe_psql($db, $query);    # psql -XAtq
	return grep { $_ ne '' } split /\n/, $out;
}

# catalogs_match(node_a, db_a, node_b, db_b, label): one test.
sub catalogs_match
{
	my ($node_a, $db_a, $node_b, $db_b, $label) = @_;
	my @a = catalog_facts($node_a, $db_a);
	my @b = catalog_facts($node_b, $db_b);
	my (%in_a, %in_b);
	$in_a{$_}++ for @a;
	$in_b{$_}++ for @b;
	my @diff = ((map { "- $_" } grep { !$in_b{$_} } @a),
		(map { "+ $_" } grep { !$in_a{$_} } @b));
	# An empty description would match anything: demand the basics.
	my $sane = (grep { /^member\|function / } @a) && (grep { /^member\|table / } @a);
	my $ok = ok(@diff == 0 && $sane && @a == @b, $label);
	if (!$ok)
	{
		diag("catalog differences ($db_a: -, $db_b: +):");
		diag($_) for @diff;
		diag('the description lacks member functions or tables') unless $sane;
	}
	return $ok;
}

1;
