# Copyright (c) 2026, the dlock developers

# A forced revoke signals a pinner only while it still runs the transaction
# it was listed in (src/README, "Revoking").  The revoke lists the holders
# of the check protection, checks its privilege to end each (a catalog
# read of the pinner's role), then cancels them.  Here that read waits
# behind a lock on pg_authid, and meanwhile the pinner commits and starts an
# unrelated statement: that statement must not be cancelled, nor the pinner
# be in `ended`.  A second pinner, still in its transaction, is ended as
# before.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use FindBin;
use lib "$FindBin::RealBin/../lib";
use DlockTest;

plan skip_all => 'the C edition only' if dlock_edition() ne 'c';

my $node = PostgreSQL::Test::Cluster->new('revoke_signal');
$node->init;
$node->start;

sub sql
{
	my ($query) = @_;
	return $node->safe_psql('postgres', $query);
}

install_dlock($node, 'postgres');
sql(q{CREATE ROLE app LOGIN; CREATE ROLE app2 LOGIN IN ROLE app;
	GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO app;
	GRANT USAGE ON SCHEMA public TO app});
my $token = sql(q{SET ROLE app; SELECT dlock_acquire('job', '1 hour')});
like($token, qr/^\d+$/, 'app holds the lease');

# The pinner that commits during the round, logged in as app2: a role the
# revoker's session has not looked up yet (a backend's role, for the
# privilege check, is the one it logged in as).
my $pinner = $node->background_psql('postgres', on_error_stop => 0,
	extra_params => [ '-U', 'app2' ]);
my $pinner_pid = $pinner->query_safe('SELECT pg_backend_pid()');
$pinner->query_safe('BEGIN');
is($pinner->query_safe(qq{SELECT dlock_check('job', $token)}), 't',
	'the pinner vouched for the token');

# A second pinner that stays in its transaction, idle.
my $idle = $node->background_psql('postgres', on_error_stop => 0,
	extra_params => [ '-U', 'app' ]);
my $idle_pid = $idle->query_safe('SELECT pg_backend_pid()');
$idle->query_safe('BEGIN');
$idle->query_safe(qq{SELECT dlock_check('job', $token)});

# Sessions opened before pg_authid is locked: a new connection would wait
# for that lock to authenticate, as would a query of pg_stat_activity.
my $observer = $node->background_psql('postgres', on_error_stop => 0);
my $locker = $node->background_psql('postgres', on_error_stop => 0);
$locker->query_safe('BEGIN');

# poll(query): wait until query, run in the observer's session, is true.
sub poll
{
	my ($query) = @_;
	for (my $i = 0; $i < 10 * $PostgreSQL::Test::Utils::timeout_default; $i++)
	{
		return 1 if $observer->query_safe($query) eq 't';
		usleep(100_000);
	}
	return 0;
}

# The forced revoke, as a superuser; it waits 1 s first.
my $revoker = $node->background_psql('postgres', on_error_stop => 0);
my $revoker_pid = $revoker->query_safe('SELECT pg_backend_pid()');
$revoker->query_until(qr/revoking/, qq{\\echo revoking
SELECT coalesce(revoked_token = $token, false) AS revoked,
	$pinner_pid = ANY (ended) AS pinner_ended,
	$idle_pid = ANY (ended) AS idle_ended
	FROM dlock_revoke('job', $token, wait => '1 s', force => true);
\\echo revoked
});

# Hold the revoker in its privilege check, after it listed the pinners.
$locker->query_safe('LOCK TABLE pg_catalog.pg_authid IN ACCESS EXCLUSIVE MODE');
ok( poll(qq{SELECT EXISTS (SELECT FROM pg_locks
		WHERE pid = $revoker_pid AND NOT granted
		AND relation = 'pg_catalog.pg_authid'::regclass)}),
	'the revoker listed the pinners and waits to read the role of one');

# The pinner commits, and runs an unrelated statement.
$pinner->query_safe('COMMIT');
$pinner->query_until(qr/sleeping/, q{\echo sleeping
SELECT true AS slept FROM pg_sleep(2);
\echo slept
});
ok( poll(qq{SELECT wait_event = 'PgSleep' FROM pg_stat_get_activity($pinner_pid)}),
	'the pinner sleeps in a new transaction');
$locker->query_safe('COMMIT');

my $slept = $pinner->query_until(qr/slept/, '');
like($slept, qr/^t$/m,
	'the pinner\'s new statement was not cancelled');
unlike($pinner->{stderr}, qr/canceling statement/, 'no cancel reached it');

my $revoked = $revoker->query_until(qr/revoked\n/, '');
like($revoked, qr/^t\|f\|t$/m,
	'the lease was revoked; the pinner is not in ended, the idle one is');
is(sql(qq{SELECT count(*) FROM pg_stat_activity WHERE pid = $pinner_pid}),
	'1', 'the pinner\'s session is still there');
is($pinner->query_safe('SELECT 1'), '1', 'and answers');
ok( $node->poll_query_until(
		'postgres', qq{SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $idle_pid}),
	'the idle pinner was terminated');
eval { $idle->{run}->finish; };

$pinner->quit;
$revoker->quit;
$locker->quit;
$observer->quit;
$node->stop;
done_testing();
