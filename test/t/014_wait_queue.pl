# Copyright (c) 2026, the dlock developers

# The waiting queue of dlock_acquire (issue 16): waiters are served first
# come, first served; a caller with wait => 0 does not jump the queue; an
# owner renews at once while others queue; cancel, statement_timeout and
# lock_timeout end a wait in the queue and at its head with their own
# errors, leave no lock behind, and the next waiter moves up; a waiter gets
# NULL at its own deadline in the queue; VACUUM FULL of the lease table
# does not wait for the waiters; leases acquired in open transactions that
# wait for each other end in a deadlock error (40P01) for one of them.
# Everything here is asserted by state (pg_locks, the lease, the order of
# service), never by timings.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use DlockTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('wait_queue');
$node->init;
$node->append_conf('postgresql.conf', "max_connections = 50\n");
$node->start;

sub sql
{
	my ($query) = @_;
	return $node->safe_psql('postgres', $query);
}

# Backends in the queue of a name (its head and those waiting behind it).
sub queue_length_is
{
	my ($n) = @_;
	return $node->poll_query_until('postgres', qq{SELECT count(*) = $n
		FROM pg_catalog.pg_locks WHERE locktype = 'advisory' AND objsubid = 17485});
}

# Is pid the head of a queue: holds the queue lock and sleeps on its latch?
sub is_head
{
	my ($pid) = @_;
	return $node->poll_query_until('postgres', qq{SELECT count(*) = 1
		FROM pg_catalog.pg_locks l JOIN pg_catalog.pg_stat_activity a USING (pid)
		WHERE l.pid = $pid AND l.locktype = 'advisory' AND l.objsubid = 17485
		  AND l.granted AND a.wait_event = 'Extension'});
}

sub dlock_locks_of
{
	my ($pid) = @_;
	return sql(qq{SELECT count(*) FROM pg_catalog.pg_locks
		WHERE pid = $pid AND locktype = 'advisory' AND objsubid IN (17484, 17485)});
}

# A session that starts a waiting acquire and then keeps going on its own.
sub start_waiter
{
	my ($script) = @_;
	my $s = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	$s->query_until(qr/started/, "\\echo started\n\\set VERBOSITY verbose\n$script\n");
	return ($s, $pid);
}

sql('CREATE EXTENSION dlock');
sql('CREATE TABLE served (n serial PRIMARY KEY, who int NOT NULL)');

# 1. First come, first served: 20 waiters, each started once the one before
# it is in the queue, each releasing at once, are served in arrival order.
my $token = sql(q{SELECT dlock_acquire('fifo', '1 hour')});
my @waiters;
for my $i (1 .. 20)
{
	my ($s) = start_waiter(qq{SELECT dlock_acquire('fifo', '1 hour', '5 min') AS t \\gset
INSERT INTO served (who) VALUES ($i);
SELECT dlock_release('fifo', :t);});
	push @waiters, $s;
	ok(queue_length_is($i), "waiter $i is in the queue");
}
is(sql(qq{SELECT dlock_release('fifo', $token)}), 't', 'the holder releases');
ok($node->poll_query_until('postgres', 'SELECT count(*) = 20 FROM served'),
	'every waiter was served');
is(sql(q{SELECT string_agg(who::text, ',' ORDER BY n) FROM served}),
	join(',', 1 .. 20), 'the waiters were served in arrival order');
$_->quit for @waiters;
ok(queue_length_is(0), 'the queue is empty afterwards');

# 2. A free lease with a queue: wait => 0 gets NULL, a short wait gets NULL
# at its deadline, and the head gets the lease.  The head is stopped, so
# the lease stays free with somebody queued.
$token = sql(q{SELECT dlock_acquire('jump', '1 hour')});
my ($head, $head_pid) = start_waiter(q{SELECT dlock_acquire('jump', '1 hour', '5 min') IS NOT NULL AS head_got_it;});
ok(is_head($head_pid), 'the first waiter is the head of the queue');
kill 'STOP', $head_pid;
is(sql(qq{SELECT dlock_release('jump', $token)}), 't', 'the holder releases');
is(sql(q{SELECT dlock_acquire('jump', '1 hour') IS NULL}), 't',
	'wait => 0 does not take a free lease past the queue');
is(sql(q{SELECT dlock_acquire('jump', '1 hour', '200 ms') IS NULL}), 't',
	'a waiter behind the head gets NULL at its own deadline');
is(sql(q{SELECT held FROM dlock_leases WHERE name = 'jump'}), 'f',
	'the lease is still free for the head');
kill 'CONT', $head_pid;
ok($node->poll_query_until('postgres', qq{SELECT held AND token > $token FROM dlock_leases WHERE name = 'jump'}),
	'the head takes the lease once it runs again');
ok($node->poll_query_until('postgres', qq{SELECT count(*) = 0 FROM pg_locks WHERE pid = $head_pid AND locktype = 'advisory' AND objsubid = 17485}),
	'the head left the queue');
$head->quit;

# 3. An owner renews at once while others queue, with and without wait.
$token = sql(q{SELECT dlock_acquire('own', '1 hour', '0', 'me')});
my ($wa, $pid_a) = start_waiter(q{SELECT dlock_acquire('own', '1 hour', '5 min');});
ok(is_head($pid_a), 'waiter a is the head');
my ($wb, $pid_b) = start_waiter(q{SELECT dlock_acquire('own', '1 hour', '5 min');});
ok(queue_length_is(2), 'waiter b queues behind it');
my ($wc, $pid_c) = start_waiter(q{SELECT dlock_acquire('own', '1 hour', '5 min');});
ok(queue_length_is(3), 'waiter c queues behind b');
is(sql(q{SELECT dlock_acquire('own', '1 hour', '0', 'me')}), $token,
	'the owner renews with wait => 0 while others queue');
is(sql(q{SELECT dlock_acquire('own', '1 hour', '1 min', 'me')}), $token,
	'the owner renews with a wait while others queue, without queueing');
is(sql(q{SELECT dlock_acquire('own', '1 hour', '0', 'other')}), '',
	'another owner gets NULL');

# 4. Cancel in the queue and at its head; the next waiter moves up.
is(sql("SELECT pg_cancel_backend($pid_b)"), 't', 'cancel waiter b in the queue');
ok($node->poll_query_until('postgres', "SELECT state = 'idle' FROM pg_stat_activity WHERE pid = $pid_b"),
	'waiter b is idle again');
$wb->quit;
like($wb->{stderr}, qr/57014: canceling statement due to user request/, 'cancel in the queue: 57014');
is(dlock_locks_of($pid_b), '0', 'waiter b left no dlock lock');
is(sql("SELECT pg_cancel_backend($pid_a)"), 't', 'cancel waiter a, the head');
ok(is_head($pid_c), 'waiter c moves up to the head');
$wa->quit;
like($wa->{stderr}, qr/57014: canceling statement due to user request/, 'cancel at the head: 57014');
is(dlock_locks_of($pid_a), '0', 'waiter a left no dlock lock');

# statement_timeout and lock_timeout behind the head, and at the head
# (waiter c) after a VACUUM FULL.
is( query_sqlstate($node, 'postgres', q{SET statement_timeout = '300ms';
SELECT dlock_acquire('own', '1 hour', '5 min');}), '57014',
	'statement_timeout in the queue: 57014');
is( query_sqlstate($node, 'postgres', q{SET lock_timeout = '300ms';
SELECT dlock_acquire('own', '1 hour', '5 min');}), '55P03',
	'lock_timeout in the queue: 55P03');
ok(queue_length_is(1), 'only the head is left in the queue');

# 5. VACUUM FULL of the lease table while waiters sleep: it waits for none
# of them, and the other calls go on.
my ($wd, $pid_d) = start_waiter(q{SELECT dlock_acquire('own', '1 hour', '5 min');});
ok(queue_length_is(2), 'waiter d queues behind c');
is( query_sqlstate($node, 'postgres', q{SET lock_timeout = '20s';
VACUUM FULL dlock_lease;}), '', 'VACUUM FULL does not wait for the waiters');
like(sql(q{SELECT dlock_acquire('after-vacuum', '1 hour')}), qr/^\d+$/,
	'other names are acquired as usual meanwhile');
is(sql(qq{SELECT dlock_check('own', $token)}), 't', 'the lease of the waited-for name is intact');
is(sql("SELECT pg_cancel_backend($pid_c)"), 't', 'cancel waiter c');
ok(is_head($pid_d), 'waiter d moves up to the head');
$wc->quit;
is(dlock_locks_of($pid_c), '0', 'waiter c left no dlock lock');
is(sql(qq{SELECT dlock_release('own', $token)}), 't', 'the owner releases');
ok($node->poll_query_until('postgres', q{SELECT held AND token > 0 FROM dlock_leases WHERE name = 'own'}),
	'waiter d gets the lease');
$wd->quit;
is(sql(q{SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid IN (17484, 17485)}),
	'0', 'no dlock lock is left');

# 6. Two transactions, each holding a lease it acquired, wait for each
# other's: the deadlock detector ends one wait with 40P01 (the session with
# the shorter deadlock_timeout looks first), the other one gets its lease.
my $s1 = $node->background_psql('postgres', on_error_stop => 0);
my $s2 = $node->background_psql('postgres', on_error_stop => 0);
my $pid1 = $s1->query_safe(q{SET deadlock_timeout = '1min'; SELECT pg_backend_pid()});
$s2->query_safe(q{SET deadlock_timeout = '100ms'});
$s1->query_safe(q{BEGIN; SELECT dlock_acquire('d1', '1 hour')});
$s2->query_safe(q{BEGIN; SELECT dlock_acquire('d2', '1 hour')});
$s1->query_until(qr/started/, q{\echo started
SELECT dlock_acquire('d2', '1 hour', '5 min') IS NOT NULL AS s1_got_d2;
});
ok( $node->poll_query_until('postgres',
		qq{SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $pid1}),
	'session 1 waits for the lock of the lease session 2 acquired');
$s2->query(q{\set VERBOSITY verbose
SELECT dlock_acquire('d1', '1 hour', '5 min');});
# The error may reach psql's stderr only with the next query's output.
my $s2_errors = $s2->{stderr};
$s2->query('ROLLBACK');
$s2_errors .= $s2->{stderr};
like($s2_errors, qr/40P01: deadlock detected/, 'session 2 gets a deadlock error');
$s1->query_safe('COMMIT');
$s1->quit;
$s2->quit;
is(sql(q{SELECT string_agg(name || ':' || held, ',' ORDER BY name) FROM dlock_leases WHERE name IN ('d1', 'd2')}),
	'd1:true,d2:true', 'session 1 got the lease session 2 gave up, and kept its own');

$node->stop;
done_testing();
