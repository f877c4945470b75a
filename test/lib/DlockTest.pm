# Copyright (c) 2026, the dlock developers
#
# DlockTest: helpers the Perl TAP tests under test/t share.
package DlockTest;

use strict;
use warnings;

use Exporter 'import';
our @EXPORT = qw(query_sqlstate);

# query_sqlstate(node, db, query, psql options...): the SQLSTATE of the first
# error the query raises, or '' when it succeeds.
sub query_sqlstate
{
	my ($node, $db, $query, @opts) = @_;
	my ($ret, $out, $err) = $node->psql($db, "\\set VERBOSITY sqlstate\n$query",
		on_error_stop => 1, @opts);
	return $ret == 0 ? '' : ($err =~ /ERROR:\s+([0-9A-Z]{5})/ ? $1 : $err);
}

1;
