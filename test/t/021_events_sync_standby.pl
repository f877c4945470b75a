# Copyright (c) 2026, the dlock developers

# Lease events and a synchronous standby that stops answering (issue 24,
# item 12; docs/events.md, "With a synchronous standby").
#
# PostgreSQL serializes notifying commits with one cluster-wide lock that a
# commit holds until it is over, its wait for the synchronous standbys
# included.  With dlock.events on, an acquire whose caller asked for no
# standby wait (synchronous_commit = local) still waits for the standby,
# because dlock makes every acquisition durable there, but only after its
# commit has released its locks: so the standby's silence holds back that
# acquire, and nothing else.
#
# The standby's WAL receiver is stopped with SIGSTOP: it stays connected
# and acknowledges nothing.  Then:
# 1. An acquire with synchronous_commit = local does not return: it waits
#    for the standby (wait_event SyncRep), and is not the holder of NOTIFY's
#    lock meanwhile: another session's NOTIFY with synchronous_commit =
#    local commits within its lock_timeout, and its listener gets it; a
#    second such acquire of another name waits for the standby too, not for
#    the lock.  The lease is visible as held on the primary (the local
#    commit is done), as the docs say.  Once the WAL receiver goes on, both
#    acquires return their tokens, and the standby has both leases.
# 2. An acquire whose own synchronous_commit is on holds the lock across
#    its wait, as any notifying commit with that setting does: the other
#    session's NOTIFY then fails with 55P03 at its lock_timeout, as the docs
#    say.
# 3. A renewal (no lease event) in a transaction that sent a NOTIFY of its
#    own, at synchronous_commit = local, does not hold the lock across
#    dlock's wait for the standby either.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::Bin/../lib";
use DlockTest;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', "dlock.events = on\n");
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION dlock');
$primary->backup('backup');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;

# The standby connects with application_name = its cluster_name, "standby".
$primary->append_conf('postgresql.conf',
	"synchronous_standby_names = 'standby'");
$primary->reload;
ok( $primary->poll_query_until(
		'postgres',
		q{SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby'},
		'sync'),
	'the standby is synchronous');

# The first draw of the database (a jump) is made with the standby up.
like(
	$primary->safe_psql('postgres', q{SELECT dlock_acquire('warm', '1 min')}),
	qr/^\d+$/, 'an acquire with the standby answering');
$primary->wait_for_catchup($standby);

# The standby's WAL receiver, once the standby is synchronous (again: a
# WAL receiver that was stopped long enough may have been replaced).
sub walreceiver
{
	$primary->poll_query_until(
		'postgres',
		q{SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby'},
		'sync')
	  or die 'the standby is not synchronous';
	$primary->wait_for_catchup($standby);
	return $standby->safe_psql('postgres',
		'SELECT pid FROM pg_stat_wal_receiver');
}
my $walreceiver = walreceiver();
like($walreceiver, qr/^\d+$/, 'the standby has a WAL receiver');

sub sql
{
	my ($query) = @_;
	return $primary->safe_psql('postgres', $query);
}

# A session on the primary, with its pid.
sub session
{
	my ($setup) = @_;
	my $s = $primary->background_psql('postgres');
	$s->query_safe($setup) if defined $setup;
	return ($s, $s->query_safe('SELECT pg_backend_pid()'));
}

# Send a query without waiting for its result.
sub send_query
{
	my ($s, $query) = @_;
	$s->{stdin} .= "$query\n";
	$s->{run}->pump_nb;
}

# Wait until the backend pid waits for the synchronous standby; '' if it
# never did (it returned, or waits for something else).
sub wait_for_syncrep
{
	my ($s, $pid) = @_;
	my $deadline = time + 60;
	while (time < $deadline)
	{
		my $event =
		  sql("SELECT wait_event FROM pg_stat_activity WHERE pid = $pid");
		return $event if $event eq 'SyncRep';
		$s->{run}->pump_nb;
		return '' if $s->{stdout} =~ /^\d+$/m;
		select(undef, undef, undef, 0.05);
	}
	return '';
}

# Commit a NOTIFY with synchronous_commit = local from a new session:
# '' when it committed, else the SQLSTATE of its error, and the seconds it
# took.
sub notify_local
{
	my ($payload, $lock_timeout) = @_;
	my $start = time;
	my $state = query_sqlstate(
		$primary, 'postgres',
		"SET synchronous_commit = local; SET lock_timeout = '$lock_timeout';
		 NOTIFY app_channel, '$payload';");
	return ($state, time - $start);
}

# What the listening session printed until a notification with payload
# came (psql prints notifications after a query's result), or 10 s passed.
sub listen_for
{
	my ($s, $payload) = @_;
	my $out = '';
	my $deadline = time + 10;
	while (time < $deadline)
	{
		$out .= $s->query_safe('SELECT 1');
		last if $out =~ /with payload "\Q$payload\E"/;
		select(undef, undef, undef, 0.1);
	}
	return $out;
}

# Nobody waits for NOTIFY's lock (object 0 of pg_database).
my $lock_waiters = q{SELECT count(*) FROM pg_locks
  WHERE locktype = 'object' AND classid = 'pg_database'::regclass
    AND objid = 0 AND NOT granted};

my ($listener) = session('LISTEN app_channel');

# 1. The caller asked for synchronous_commit = local.
my ($a, $a_pid) = session('SET synchronous_commit = local');
my ($b, $b_pid) = session('SET synchronous_commit = local');

kill 'STOP', $walreceiver;
send_query($a, q{SELECT dlock_acquire('stalled/a', '10 min');});
is(wait_for_syncrep($a, $a_pid), 'SyncRep',
	'standby silent: the acquire waits for the synchronous standby');

my ($state, $took) = notify_local('while a waits', '10s');
is($state, '', "standby silent: another session's NOTIFY with synchronous_commit = local commits");
cmp_ok($took, '<', 10, '... well within its lock_timeout');
like(
	listen_for($listener, 'while a waits'),
	qr/Asynchronous notification "app_channel" with payload "while a waits"/,
	'... and its listener gets it');

send_query($b, q{SELECT dlock_acquire('stalled/b', '10 min');});
is(wait_for_syncrep($b, $b_pid), 'SyncRep',
	'standby silent: a second acquire waits for the standby too');
is(sql($lock_waiters), '0', '... and nobody waits for NOTIFY\'s lock');

$a->{run}->pump_nb;
is($a->{stdout}, '', 'standby silent: the first acquire has not returned');
is( sql(q{SELECT string_agg(name, ',' ORDER BY name) FROM dlock_leases
  WHERE name LIKE 'stalled/%' AND held}),
	'stalled/a,stalled/b',
	'standby silent: both leases read as held on the primary');

kill 'CONT', $walreceiver;
my $t_a = $a->query_safe('SELECT 1');
my $t_b = $b->query_safe('SELECT 1');
like($t_a, qr/^\d+\n1$/, 'standby back: the first acquire returned a token');
like($t_b, qr/^\d+\n1$/, 'standby back: the second acquire returned a token');
$primary->wait_for_catchup($standby);
is( $standby->safe_psql(
		'postgres',
		q{SELECT string_agg(name || '=' || held, ',' ORDER BY name) FROM dlock_leases
  WHERE name LIKE 'stalled/%'}),
	'stalled/a=true,stalled/b=true',
	'standby: it has both leases');

# 2. The caller's own synchronous_commit waits for the standby.
my ($c, $c_pid) = session('SET synchronous_commit = on');
$walreceiver = walreceiver();
kill 'STOP', $walreceiver;
send_query($c, q{SELECT dlock_acquire('stalled/c', '10 min');});
is(wait_for_syncrep($c, $c_pid), 'SyncRep',
	'standby silent: an acquire with synchronous_commit = on waits for the standby');
($state) = notify_local('while c waits', '1s');
is($state, '55P03',
	"standby silent: it holds NOTIFY's lock meanwhile, so another session's NOTIFY fails at its lock_timeout");
kill 'CONT', $walreceiver;
like($c->query_safe('SELECT 1'), qr/^\d+\n1$/,
	'standby back: that acquire returned a token');
($state) = notify_local('after', '10s');
is($state, '', 'standby back: NOTIFY commits again');

# 3. A transaction that sends a NOTIFY of its own and renews its lease
# (an owner's acquire: no lease event) at synchronous_commit = local: dlock
# still makes the renewal durable on the standby, after the commit let go of
# NOTIFY's lock.
my ($d, $d_pid) = session('SET synchronous_commit = local');
$d->query_safe(q{SELECT dlock_acquire('stalled/d', '10 min', owner => 'me')});
$walreceiver = walreceiver();
kill 'STOP', $walreceiver;
send_query($d,
	q{BEGIN; NOTIFY app_channel, 'from d'; SELECT dlock_acquire('stalled/d', '10 min', owner => 'me') > 0 AS renewed; COMMIT;}
);
is(wait_for_syncrep($d, $d_pid), 'SyncRep',
	'standby silent: a renewal that sent its own NOTIFY waits for the standby');
($state, $took) = notify_local('while d waits', '10s');
is($state, '',
	"... and does not hold NOTIFY's lock meanwhile: another session's NOTIFY commits");
cmp_ok($took, '<', 10, '... well within its lock_timeout');
kill 'CONT', $walreceiver;
like($d->query_safe('SELECT 1'), qr/^t\n1$/,
	'standby back: the renewal returned');

$_->quit for ($listener, $a, $b, $c, $d);
$primary->stop;
$standby->stop;
done_testing();
