# Copyright (c) 2026, the dlock developers

# A waiting dlock_acquire whose client has gone (issue 24 item 6) takes no
# lease: the client of the head of the queue and of a waiter queued behind
# it are killed with SIGKILL while they wait; once the holder releases, the
# lease goes to a live caller at once, and neither dead waiter's backend
# committed anything.  Asserted by state (the lease's owner, the log), with
# generous waits.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use DlockTest;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('wait_client_gone');
$node->init;
$node->start;

sub sql
{
	my ($query) = @_;
	return $node->safe_psql('postgres', $query);
}

# Start psql running one waiting acquire, with no way to end it but a kill;
# return its harness and its backend's pid once the backend waits.
sub start_dead_waiter
{
	my ($owner, $queued) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[
			'psql', '-X', '-q', '-d', $node->connstr('postgres'), '-c',
			"SELECT dlock_acquire('gone', '1 hour', '5 min', '$owner')"
		],
		'>', \$out, '2>', \$err);
	ok( $node->poll_query_until(
			'postgres', qq{SELECT count(*) = $queued FROM pg_catalog.pg_locks
		WHERE locktype = 'advisory' AND objsubid = 17485}),
		"waiter $owner is in the queue");
	my $pid = sql(qq{SELECT pid FROM pg_catalog.pg_stat_activity
		WHERE query LIKE '%$owner'')' AND pid <> pg_backend_pid()});
	return ($h, $pid);
}

sql('CREATE EXTENSION dlock');
my $token = sql(q{SELECT dlock_acquire('gone', '1 hour', '0', 'holder')});

# The first waiter is the head of the queue (sleeping on its latch), the
# second waits behind it in the lock manager.
my ($head, $head_pid) = start_dead_waiter('dead-head', 1);
my ($queued, $queued_pid) = start_dead_waiter('dead-queued', 2);
$head->signal('KILL');
$queued->signal('KILL');
$head->finish;
$queued->finish;

is(sql(qq{SELECT dlock_release('gone', $token)}), 't', 'the holder releases');
is( sql(q{SELECT dlock_acquire('gone', '1 hour', '20 s', 'live') IS NOT NULL}),
	't', 'a live caller gets the lease');
is(sql(q{SELECT owner FROM dlock_leases WHERE name = 'gone'}),
	'live', 'the lease is the live caller\'s, not a dead waiter\'s');
ok( $node->poll_query_until(
		'postgres', qq{SELECT count(*) = 0 FROM pg_catalog.pg_stat_activity
		WHERE pid IN ($head_pid, $queued_pid)}),
	'both dead waiters\' backends exited');
like(
	slurp_file($node->logfile),
	qr/FATAL:  connection to client lost/,
	'a dead waiter ends as PostgreSQL ends a backend whose client is lost');

# A waiter with a live client still gets the lease after the holder's
# release (the client check does not end live waiters).
$token = sql(q{SELECT dlock_acquire('alive', '1 hour')});
my $s = $node->background_psql('postgres');
$s->query_until(qr/started/,
	"\\echo started\nSELECT dlock_acquire('alive', '1 hour', '5 min') IS NOT NULL AS got;\n"
);
ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) = 1 FROM pg_catalog.pg_locks
		WHERE locktype = 'advisory' AND objsubid = 17485}),
	'a live waiter is in the queue');
is(sql(qq{SELECT dlock_release('alive', $token)}), 't', 'the holder releases');
ok( $node->poll_query_until(
		'postgres', q{SELECT held FROM dlock_leases WHERE name = 'alive'}),
	'the live waiter takes the lease');
$s->quit;

$node->stop;
done_testing();
