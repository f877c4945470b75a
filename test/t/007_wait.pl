# Copyright (c) 2026, the dlock developers

# Waiting acquires and their interruptions: a backend terminated while it
# waits leaves nothing behind (no lock, no change to the lease), and the
# lease goes on normally afterwards; cancel and statement_timeout end a wait
# with their own SQLSTATEs.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('wait');
$node->init;
$node->start;

sub sql
{
	my ($query) = @_;
	return $node->safe_psql('postgres', $query);
}

my $dlock_locks = q{SELECT count(*) FROM pg_catalog.pg_locks
	WHERE locktype = 'advisory' AND objsubid IN (17484, 17485)};

sql('CREATE EXTENSION dlock');
my $token = sql(q{SELECT dlock_acquire('job', '1 hour')});
like($token, qr/^\d+$/, 'holder got a token');

# A waiter, terminated while it waits.
my $waiter = $node->background_psql('postgres', on_error_stop => 0);
my $pid = $waiter->query_safe('SELECT pg_backend_pid()');
$waiter->query_until(qr/waiting/, q{\echo waiting
SELECT dlock_acquire('job', '1 hour', '1 min');
});
ok( $node->poll_query_until(
		'postgres', qq{SELECT wait_event = 'Extension' FROM pg_stat_activity WHERE pid = $pid}),
	'the waiter sleeps in its wait');
is(sql(qq{SELECT count(*) FROM pg_locks WHERE pid = $pid AND locktype = 'advisory' AND objsubid = 17484}),
	'0', 'the waiter holds no lock on the name while it waits');
is(sql(qq{SELECT count(*) FROM pg_locks WHERE pid = $pid AND locktype = 'advisory' AND objsubid = 17485 AND mode = 'ExclusiveLock' AND granted}),
	'1', 'the waiter is visible as the head of the name\'s queue');
is(sql("SELECT pg_terminate_backend($pid)"), 't', 'terminated the waiter');
ok($node->poll_query_until('postgres', "SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $pid"),
	'the waiter is gone');
# The waiter's psql lost its server: wait for it to notice, do not talk to it.
eval { $waiter->{run}->finish; };

is(sql($dlock_locks), '0', 'no dlock lock left behind');
is(sql(qq{SELECT token = $token AND held FROM dlock_leases WHERE name = 'job'}), 't',
	'the lease is unchanged');
is(sql(qq{SELECT dlock_release('job', $token)}), 't', 'the holder releases');
my $next = sql(q{SELECT dlock_acquire('job', '1 hour', '1 s')});
cmp_ok($next, '>', $token, 'the next acquire gets a newer token at once');

# Cancel and statement_timeout, with their SQLSTATEs.
my ($ret, $stdout, $stderr) = $node->psql('postgres', q{
\set VERBOSITY verbose
SET statement_timeout = '200ms';
SELECT dlock_acquire('job', '1 hour', '1 min');
});
like($stderr, qr/57014: canceling statement due to statement timeout/, 'statement_timeout ends the wait: 57014');

($ret, $stdout, $stderr) = $node->psql('postgres', q{
\set VERBOSITY verbose
SET lock_timeout = '200ms';
SELECT dlock_acquire('job', '1 hour', '1 min');
});
like($stderr, qr/55P03: canceling statement due to lock timeout/, 'lock_timeout ends the wait: 55P03');

my $canceled = $node->background_psql('postgres', on_error_stop => 0);
$pid = $canceled->query_safe('SELECT pg_backend_pid()');
$canceled->query_until(qr/waiting/, q{\echo waiting
\set VERBOSITY verbose
SELECT dlock_acquire('job', '1 hour', '1 min');
});
ok( $node->poll_query_until(
		'postgres', qq{SELECT wait_event = 'Extension' FROM pg_stat_activity WHERE pid = $pid}),
	'the second waiter sleeps in its wait');
is(sql("SELECT pg_cancel_backend($pid)"), 't', 'cancelled the waiter');
ok( $node->poll_query_until(
		'postgres', qq{SELECT state = 'idle' FROM pg_stat_activity WHERE pid = $pid}),
	'the cancelled waiter is idle again');
$canceled->quit;
like($canceled->{stderr}, qr/57014: canceling statement due to user request/, 'cancel ends the wait: 57014');
is(sql($dlock_locks), '0', 'no dlock lock left behind after cancel and timeouts');

$node->stop;
done_testing();
