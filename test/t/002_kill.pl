# Copyright (c) 2026, the dlock developers

# A backend killed with SIGKILL inside an open transaction that has acquired
# leases: the postmaster's crash restart rolls the acquires back.  Afterwards
# the leases are free (a name never acquired before has no row, a name that
# was free keeps its last committed state), they can be acquired again with
# tokens greater than every token handed out before, including the tokens
# the killed transaction received and never committed, and no dlock advisory
# lock is left in pg_locks.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('kill');
$node->init;

# PostgreSQL::Test::Cluster turns restart_after_crash off; the postmaster
# must survive the killed backend.  The WAL writer wakes up only every 10s,
# and no autovacuum commit or background writer flushes WAL on the way: the
# counter's WAL written inside the doomed transaction reaches disk only if
# dlock flushes it before it returns the token.
$node->append_conf(
	'postgresql.conf', q{
restart_after_crash = on
wal_writer_delay = '10s'
autovacuum = off
bgwriter_lru_maxpages = 0
});
$node->start;

sub sql
{
	my ($query) = @_;
	return $node->safe_psql('postgres', $query);
}

my $dlock_locks = q{SELECT count(*) FROM pg_catalog.pg_locks
	WHERE locktype = 'advisory' AND objsubid = 17484};

sql('CREATE EXTENSION dlock');

# "kill/old" was acquired and released before: its row exists, free.
my $old = sql(q{SELECT dlock_acquire('kill/old', '1 hour')});
is(sql("SELECT dlock_release('kill/old', $old)"), 't', 'kill/old released');
my $max_token = $old;

# Make the counter WAL-log its next value inside the doomed transaction.
sql('CHECKPOINT');

my $killme = $node->background_psql('postgres');
my $pid = $killme->query_safe('SELECT pg_backend_pid()');
like($pid, qr/^\d+$/, 'got the pid of the backend to kill');

$killme->query_safe('BEGIN');
my $t_new = $killme->query_safe(q{SELECT dlock_acquire('kill/new', '1 hour')});
my $t_old = $killme->query_safe(q{SELECT dlock_acquire('kill/old', '1 hour')});
cmp_ok($t_new, '>', $max_token, 'open transaction: acquire of kill/new got a token');
cmp_ok($t_old, '>', $t_new, 'open transaction: acquire of kill/old got a token');

# While that transaction is open, its locks are visible and hold off others.
cmp_ok(sql("$dlock_locks AND pid = $pid"),
	'>', 0, 'open transaction: it holds dlock advisory locks');
is(sql(q{SELECT dlock_acquire('kill/new', '1 hour')}),
	'', 'open transaction: another caller cannot take kill/new');
is(sql(q{SELECT dlock_acquire('kill/old', '1 hour')}),
	'', 'open transaction: another caller cannot take kill/old');

my $offset = -s $node->logfile;
is(kill('KILL', $pid), 1, 'backend killed with SIGKILL');

# The session sees its connection die.
$killme->{stdin} .= "SELECT 1;\n";
ok( pump_until(
		$killme->{run}, $killme->{timeout},
		\$killme->{stderr},
		qr/server closed the connection unexpectedly|connection to server was lost/m
	),
	'the killed session lost its connection');
$killme->{run}->finish;

# The postmaster resets everything and runs crash recovery.
$node->wait_for_log(qr/database system is ready to accept connections/,
	$offset);
# The postmaster names the child "server process" up to 17 and by its
# backend type, "client backend", from 18 on (postmaster.c, LogChildExit;
# PostgresNode in 14 has no pg_version accessor, hence the field).
my $child = $node->{_pg_version} >= 18 ? 'client backend' : 'server process';
ok( $node->log_contains(
		qr/\Q$child\E \(PID $pid\) was terminated by signal 9/, $offset),
	"the postmaster saw the backend die of SIGKILL ($child)");
ok( $node->log_contains(qr/all server processes terminated; reinitializing/,
		$offset),
	'the postmaster reinitialized');
ok( $node->log_contains(qr/automatic recovery in progress/, $offset),
	'crash recovery ran');
ok($node->poll_query_until('postgres', 'SELECT 1', '1'),
	'the server accepts connections again');

# The acquires never committed.
is(sql(q{SELECT count(*) FROM dlock_leases WHERE name = 'kill/new'}),
	'0', 'kill/new has no lease row');
is( sql(
		q{SELECT held, token, released_at IS NOT NULL FROM dlock_leases WHERE name = 'kill/old'}
	),
	"f|$old|t",
	'kill/old is back to its released state');
is(sql($dlock_locks), '0', 'no dlock advisory lock after the crash restart');

# Both names can be taken again, with tokens greater than every committed
# one.  The tokens the killed transaction received never became valid (a
# token is valid only once its acquire commits), but its client has seen
# them: dlock flushed the counter's WAL before returning them, so they are
# never handed out again either.
my $killed_max = $t_old > $t_new ? $t_old : $t_new;
my $a_new = sql(q{SELECT dlock_acquire('kill/new', '1 hour', '0', 'after')});
cmp_ok($a_new, '>', $max_token, 'kill/new acquired again with a newer token');
cmp_ok($a_new, '>', $killed_max,
	'the first token after the crash beats the tokens the killed transaction received'
);
my $a_old = sql(q{SELECT dlock_acquire('kill/old', '1 hour', '0', 'after')});
cmp_ok($a_old, '>', $a_new, 'kill/old acquired again with a newer token');
is( sql(q{SELECT string_agg(name || '=' || held || '/' || owner, ',' ORDER BY name)
	FROM dlock_leases}),
	'kill/new=true/after,kill/old=true/after',
	'both leases are now held by the new acquirer');
is(sql($dlock_locks), '0', 'no dlock advisory lock once the acquires committed');

is(sql("SELECT dlock_release('kill/new', $a_new)"), 't', 'kill/new released');
is(sql("SELECT dlock_release('kill/old', $a_old)"), 't', 'kill/old released');

$node->stop;

done_testing();
