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

$node->stop;
done_testing();
