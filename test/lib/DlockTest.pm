# Copyright (c) 2026, the dlock developers
#
# DlockTest: helpers the Perl TAP tests under test/t share.
package DlockTest;

use strict;
use warnings;

use Cwd ();
use Exporter 'import';
use File::Basename ();
our @EXPORT = qw(query_sqlstate install_dlock dlock_edition);

# query_sqlstate(node, db, query, psql options...): the SQLSTATE of the first
# error the query raises, or '' when it succeeds.
sub query_sqlstate
{
	my ($node, $db, $query, @opts) = @_;
	my ($ret, $out, $err) = $node->psql($db, "\\set VERBOSITY sqlstate\n$query",
		on_error_stop => 1, @opts);
	return $ret == 0 ? '' : ($err =~ /ERROR:\s+([0-9A-Z]{5})/ ? $1 : $err);
}

# dlock_edition(): the edition the tests run against, from DLOCK_EDITION
# (test/run's edition switch): 'c' (the default) or 'sql'.
sub dlock_edition
{
	my $e = $ENV{DLOCK_EDITION} || 'c';
	die "DlockTest: DLOCK_EDITION is c or sql, not $e" unless $e eq 'c' || $e eq 'sql';
	return $e;
}

# install_dlock(node, db[, schema]): dlock_edition()'s dlock in schema
# (default public, made if missing) of db: CREATE EXTENSION dlock, or the
# SQL edition's psql script (dist/dlock_sql--V.psql, made by make
# sql-edition), as test/lib/install_dlock.sh installs them.
sub install_dlock
{
	my ($node, $db, $schema) = @_;
	if (dlock_edition() eq 'c')
	{
		$node->safe_psql($db, defined $schema
			? qq{CREATE SCHEMA IF NOT EXISTS "$schema"; CREATE EXTENSION dlock SCHEMA "$schema"}
			: 'CREATE EXTENSION dlock');
		return;
	}
	my $top = Cwd::abs_path(File::Basename::dirname(__FILE__) . '/../..');
	open(my $fh, '<', "$top/dlock.control") or die "DlockTest: $top/dlock.control: $!";
	my ($version) = join('', <$fh>) =~ /^default_version\s*=\s*'([^']+)'/m;
	close $fh;
	my $script = "$top/dist/dlock_sql--$version.psql";
	die "DlockTest: $script is missing (make sql-edition)" unless -r $script;
	$node->safe_psql($db, "\\set schema " . ($schema // 'public') . "\n\\o /dev/null\n\\i $script\n");
}

1;
