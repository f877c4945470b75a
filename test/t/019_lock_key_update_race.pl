# Copyright (c) 2026, the dlock developers
# A dlock call that keyed its name the 1.1 way and then waited for
# dlock_lease while ALTER EXTENSION dlock UPDATE to 1.2 held it (review 2,
# finding 1): once the update commits, the call fails instead of going on
# with a lock under a key no backend uses any more (src/relation.c).  The
# 1.2 library keys names the 1.1 way on 1.1 objects, so no old library is
# needed.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use DlockTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('update_race');
$node->init;
$node->start;
$node->safe_psql('postgres', q{CREATE EXTENSION dlock VERSION '1.1'});
my $tok = $node->safe_psql('postgres', q{SELECT dlock_acquire('payouts', '1 hour')});

# The checker has called dlock before: its relations are cached, keyed 1.1.
my $checker = $node->background_psql('postgres', on_error_stop => 0);
is($checker->query_safe(qq{SELECT dlock_check('payouts', $tok)}), 't',
	'a check before the update');
my $pid = $checker->query_safe('SELECT pg_backend_pid()');

# The update, not yet committed: it holds dlock_lease locked.
my $updater = $node->background_psql('postgres', on_error_stop => 0);
$updater->query_safe('BEGIN');
$updater->query_safe('ALTER EXTENSION dlock UPDATE');

# The check takes its lock under the 1.1 key, then waits for the table.
$checker->query_until(qr/started/, qq{\\echo started\nBEGIN;\nSELECT dlock_check('payouts', $tok);\n});
ok( $node->poll_query_until('postgres',
		qq{SELECT count(*) = 1 FROM pg_locks WHERE pid = $pid AND locktype = 'relation' AND NOT granted}),
	'the check waits for dlock_lease');
$updater->query_safe('COMMIT');
$updater->quit;

$checker->{stderr} = '';
my $out = $checker->query(q{SELECT 'after'});
like($checker->{stderr},
	qr/ERROR:  extension "dlock" was updated while a dlock function was running/,
	'the waiting check fails once the update has committed');
unlike($out // '', qr/^t$/m, 'the waiting check did not answer true');
$checker->{stderr} = '';
$checker->query('ROLLBACK');
$checker->{stderr} = '';
is($checker->query_safe(qq{SELECT dlock_check('payouts', $tok)}), 't',
	'the next check of that session keys with the secret, and holds');
$checker->quit;

$node->stop;
done_testing();
