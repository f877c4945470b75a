# Copyright (c) 2026, the dlock developers

# dlock_stats with shared_preload_libraries = 'dlock' (issue 27 item 1):
# the counters that only shared memory can hold (busy answers, timed-out
# waits, LK001 refusals) are exact, not NULL.  sql/stats.sql runs in the
# regress suite on a cluster without the library preloaded; here the same
# script runs on one with it, and must give the same expected output
# (it picks the values it expects by whether the counters exist).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $top = "$FindBin::Bin/../..";
my $node = PostgreSQL::Test::Cluster->new('stats_shared');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'dlock'");
$node->start;

$node->safe_psql('postgres', 'CREATE DATABASE stats_shared');
is($node->safe_psql('stats_shared',
		'CREATE EXTENSION dlock; SELECT count(*) FROM dlock_stats_shared() WHERE name IS NULL'),
	'1', 'the shared counters exist when preloaded');

# As pg_regress runs a test: echo every statement, errors into the output.
my ($stdout, $stderr) = run_command(
	[
		'psql', '-X', '-a', '-q',
		'-d', $node->connstr('stats_shared'),
		'-f', "$top/sql/stats.sql"
	]);
my $expected = slurp_file("$top/expected/stats.out");

# Without the file name psql puts in front of an error read from a file.
$stderr =~ s/^psql:[^:]+:\d+: //mg;
my @out = grep { !/^(NOTICE|psql)/ } split /\n/, $stdout;
my @err = grep { /^ERROR/ } split /\n/, $stderr;
my @exp_err = grep { /^ERROR/ } split /\n/, $expected;
is_deeply(\@err, \@exp_err, 'the same errors as without the library preloaded');
my @exp = grep { !/^(ERROR|NOTICE)/ } split /\n/, $expected;
is_deeply(\@out, \@exp, 'the same results as without the library preloaded');

# And the values themselves, counted in shared memory.
my $row = $node->safe_psql('stats_shared', q{
	SELECT dlock_stats_reset();
	SELECT dlock_acquire('n', '1 min') IS NOT NULL;
	SELECT dlock_acquire('n', '1 min') IS NULL;
	SELECT dlock_acquire('n', '1 min') IS NULL;
	SELECT dlock_acquire('n', '1 min', wait => '20 ms') IS NULL;
	SELECT busy || ' ' || wait_timeouts || ' ' || waits || ' ' || fence_refusals
	  FROM dlock_stats WHERE name = 'n';
});
is((split /\n/, $row)[-1], '3 1 1 0', 'busy, timed-out waits and waits counted');

# dlock_waiters knows a waiting acquire's start and deadline.
my $waiter = IPC::Run::start(
	[
		'psql', '-X', '-d', $node->connstr('stats_shared'), '-c',
		"SELECT dlock_acquire('n', '1 min', wait => '3 s')"
	],
	'>', \my $waiter_out, '2>', \my $waiter_err);
ok( $node->poll_query_until(
		'stats_shared',
		"SELECT count(*) = 1 FROM dlock_waiters WHERE name = 'n' AND kind = 'waiting'"),
	'the waiting acquire is listed');
is( $node->safe_psql(
		'stats_shared',
		"SELECT position || ' ' || (deadline - since) FROM dlock_waiters WHERE name = 'n'"),
	'1 00:00:03', 'its position, and its deadline 3 s after its start');
$waiter->finish;

# A name beyond dlock.stats_max_names is counted in the total only: its
# shared counters are unknown (NULL), not 0, and so are those of a name
# counted by name only after names were missed, until a reset (a10 F10).
$node->append_conf('postgresql.conf', 'dlock.stats_max_names = 1');
$node->restart;
$node->safe_psql('postgres', 'CREATE DATABASE stats_names');
$node->safe_psql('stats_names', 'CREATE EXTENSION dlock');
my $shared = sub {
	return $node->safe_psql('stats_names', q{
		SELECT string_agg(name || ' ' || coalesce(busy::text, 'null') || ' '
						  || coalesce(wait_timeouts::text, 'null') || ' '
						  || coalesce(fence_refusals::text, 'null') || ' ' || waits,
						  ', ' ORDER BY name)
		  FROM dlock_stats});
};
$node->safe_psql('stats_names', q{
	SELECT dlock_acquire('k1', '1 min') IS NOT NULL;
	SELECT dlock_acquire('k2', '1 min') IS NOT NULL;
	SELECT dlock_acquire('k1', '1 min') IS NULL;
});
is($shared->(), 'k1 1 0 0 0, k2 0 0 0 0',
	'a name without busy answers has 0 while no name was missed');
$node->safe_psql('stats_names', q{
	SELECT dlock_acquire('k2', '1 min') IS NULL;
	SELECT dlock_acquire('k2', '1 min', wait => '20 ms') IS NULL;
	SELECT dlock_acquire('k3', '1 min') IS NOT NULL;
});
is($shared->(), 'k1 1 0 0 0, k2 null null null 0, k3 null null null 0',
	'beyond dlock.stats_max_names: unknown, as is a name not counted before');
is($node->safe_psql('stats_names',
		'SELECT busy || \' \' || wait_timeouts || \' \' || waits FROM dlock_stats_total'),
	'3 1 1', 'the total counts every name');
$node->safe_psql('stats_names', 'SELECT dlock_stats_reset()');
is($shared->(), 'k1 0 0 0 0, k2 0 0 0 0, k3 0 0 0 0',
	'known again after a reset');
$node->safe_psql('stats_names', q{SELECT dlock_acquire('k3', '1 min') IS NULL});
is($shared->(), 'k1 0 0 0 0, k2 null null null 0, k3 null null null 0',
	'unknown again once a name is missed');

# Room again (dlock_cleanup forgets k1): a name counted by name from now on
# may have missed answers before, until its reset.
$node->safe_psql('stats_names', q{
	SELECT dlock_release('k1', (SELECT token FROM dlock_leases WHERE name = 'k1'));
	SELECT dlock_cleanup('0', 10);
	SELECT dlock_acquire('k3', '1 min') IS NULL;
});
is($shared->(), 'k2 null null null 0, k3 null null null 0',
	'a name counted after names were missed is unknown');
$node->safe_psql('stats_names', q{SELECT dlock_stats_reset('k3')});
is($shared->(), 'k2 null null null 0, k3 0 0 0 0', 'known after its own reset');
$node->safe_psql('stats_names', q{SELECT dlock_acquire('k3', '1 min') IS NULL});
is($shared->(), 'k2 null null null 0, k3 1 0 0 0', 'and counted');

$node->stop;
done_testing();
