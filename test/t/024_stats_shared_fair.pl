# Copyright (c) 2026, the dlock developers

# With shared_preload_libraries = 'dlock' (review attack4):
# - F4: one database cannot keep another from counting by name.  The
#   by-name slots (dlock.stats_max_names) are shared by the cluster; a
#   database below its share (the slots divided by the databases counting)
#   that needs one takes it from the database holding the most, whose
#   least counted names become unknown (NULL, never a smaller number),
#   while every total stays exact.
# - F5, F6: dlock_waiters shows a waiter's pid, role, since and deadline
#   only to a role that has the privileges of the waiter's role or of
#   pg_read_all_stats (pg_stat_activity's rule: a NOINHERIT member does
#   not; on PostgreSQL 14 a NOINHERIT member of pg_read_all_stats does).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('stats_fair');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'dlock'");
$node->append_conf('postgresql.conf', 'dlock.stats_max_names = 4');
$node->start;

$node->safe_psql('postgres', q{
	CREATE ROLE dlock_app LOGIN;
	CREATE DATABASE fair_a;
	CREATE DATABASE fair_b;
});
$node->safe_psql($_, 'CREATE EXTENSION dlock') for qw(fair_a fair_b);

# busy per name of a database, 'null' where unknown
my $busy = sub {
	my ($db) = @_;
	return $node->safe_psql($db, q{
		SELECT string_agg(name || ' ' || coalesce(busy::text, 'null'), ', ' ORDER BY name)
		  FROM dlock_stats});
};
my $as_app = sub {
	my ($db, $sql) = @_;
	return $node->safe_psql($db, $sql, extra_params => [ '-U', 'dlock_app' ]);
};

# A plain role in fair_a fills every slot: 5 names held, each asked again.
$as_app->('fair_a', join("\n",
	map { "SELECT dlock_acquire('a$_', '1 h') IS NOT NULL;" } 1 .. 5));
$as_app->('fair_a', join("\n",
	map { "SELECT dlock_acquire('a$_', '1 h') IS NULL;" } 1 .. 5));
$as_app->('fair_a', q{
	SELECT dlock_acquire('a1', '1 h') IS NULL;
	SELECT dlock_acquire('a1', '1 h') IS NULL;
});
is($busy->('fair_a'), 'a1 3, a2 1, a3 1, a4 1, a5 null',
	'fair_a holds every slot; its fifth name is unknown');

# fair_b (share: 4 slots / 2 databases) gets a slot from fair_a.
$as_app->('fair_b', q{
	SELECT dlock_acquire('victim', '1 h') IS NOT NULL;
	SELECT dlock_acquire('victim', '1 h') IS NULL;
});
is($busy->('fair_b'), 'victim 1', 'another database counts by name');
my $a = $busy->('fair_a');
like($a, qr/^a1 3, /, 'the most counted name keeps its slot');
is(scalar(() = $a =~ / 1(,|$)/g), 2, 'fair_a keeps 3 names counted');
unlike($a, qr/a[2-6] [02-9]/, "an evicted name's count is unknown, never smaller");
is($node->safe_psql('fair_a', 'SELECT busy FROM dlock_stats_total'), '7',
	"fair_a's total stays exact");

# Up to its share: fair_b's second name takes fair_a's slot, its third
# does not fit.
$as_app->('fair_b', q{
	SELECT dlock_acquire('victim2', '1 h') IS NOT NULL;
	SELECT dlock_acquire('victim2', '1 h') IS NULL;
	SELECT dlock_acquire('victim3', '1 h') IS NOT NULL;
	SELECT dlock_acquire('victim3', '1 h') IS NULL;
});
is($busy->('fair_b'), 'victim 1, victim2 1, victim3 null',
	'a database gets up to its share');
$as_app->('fair_a', q{
	SELECT dlock_acquire('a6', '1 h') IS NOT NULL;
	SELECT dlock_acquire('a6', '1 h') IS NULL;
});
$a = $busy->('fair_a');
like($a, qr/^a1 3, /, 'the most counted name keeps its slot still');
is(scalar(() = $a =~ / 1(,|$)/g), 1, 'fair_a at its share takes nothing back');
is($busy->('fair_b'), 'victim 1, victim2 1, victim3 null',
	"fair_b's names stay counted");
is($node->safe_psql('fair_a', 'SELECT busy FROM dlock_stats_total'), '8',
	"fair_a's total counts every busy answer");

# fair_b's reset makes its names known again and counting.
$node->safe_psql('fair_b', 'SELECT dlock_stats_reset()');
$as_app->('fair_b', q{SELECT dlock_acquire('victim', '1 h') IS NULL});
is($busy->('fair_b'), 'victim 1, victim2 0, victim3 0',
	'known again after the database reset');

# dlock_waiters: three sessions wait for a lease a superuser holds, the
# second of another role: each role's waiters keep their places in the
# queue around the ones it may not see.
$node->safe_psql('postgres', q{
	CREATE ROLE dlock_waiter LOGIN;
	CREATE ROLE dlock_inherit LOGIN IN ROLE dlock_waiter;
	CREATE ROLE dlock_noinherit LOGIN NOINHERIT IN ROLE dlock_waiter;
	CREATE ROLE dlock_stats_noinherit LOGIN NOINHERIT IN ROLE pg_read_all_stats;
});
$node->safe_psql('fair_b', q{SELECT dlock_acquire('w', '1 h')});
my @waiters;
my @roles = ('dlock_waiter', 'dlock_app', 'dlock_waiter');
for my $i (1 .. 3)
{
	push @waiters, IPC::Run::start(
		[
			'psql', '-X', '-U', $roles[ $i - 1 ], '-d', $node->connstr('fair_b'), '-c',
			"SELECT dlock_acquire('w', '1 h', wait => '1 min')"
		],
		'>', \my $out, '2>', \my $err);
	ok( $node->poll_query_until(
			'fair_b',
			"SELECT count(*) = $i FROM dlock_waiters WHERE name = 'w' AND kind = 'waiting'"),
		"waiter $i is listed");
}
my $view = q{
	SELECT string_agg(position || ':' || (pid IS NOT NULL) || (role IS NOT NULL)
					  || (since IS NOT NULL) || (deadline IS NOT NULL), ' ' ORDER BY position)
	  FROM dlock_waiters WHERE name = 'w'};
my $locks = q{
	SELECT string_agg((pid IS NOT NULL)::text || (since IS NOT NULL) || (deadline IS NOT NULL),
					  ' ' ORDER BY head DESC, pid)
	  FROM dlock_waiters_locks() WHERE name = 'w'};
my $as = sub {
	my ($role, $sql) = @_;
	return $node->safe_psql('fair_b', $sql, extra_params => [ '-U', $role ]);
};
is($as->('dlock_inherit', $view), '1:truetruetruetrue 2:falsefalsefalsefalse 3:truetruetruetrue',
	'a member that inherits the role sees pid, role, since and deadline of its waiters, in their places');
is($as->('dlock_noinherit', $view),
	'1:falsefalsefalsefalse 2:falsefalsefalsefalse 3:falsefalsefalsefalse',
	'a NOINHERIT member sees none of them, nor when the wait began (F5, F6)');
is($as->('dlock_noinherit', $locks), 'falsefalsefalse falsefalsefalse falsefalsefalse',
	'nor does dlock_waiters_locks() show them');
is($as->('dlock_app', $view),
	'1:falsefalsefalsefalse 2:truetruetruetrue 3:falsefalsefalsefalse',
	'another role sees its own waiter in second place, the others as positions only');
my $pg14 = $node->safe_psql('postgres', 'SHOW server_version_num') < 150000;
is($as->('dlock_stats_noinherit', $view),
	$pg14
	? '1:truetruetruetrue 2:truetruetruetrue 3:truetruetruetrue'
	: '1:falsefalsefalsefalse 2:falsefalsefalsefalse 3:falsefalsefalsefalse',
	'a NOINHERIT member of pg_read_all_stats: as pg_stat_activity on this major');
is($as->('dlock_stats_noinherit', q{
		SELECT count(*) FILTER (WHERE query_start IS NOT NULL) FROM pg_stat_activity
		 WHERE usename IN ('dlock_waiter', 'dlock_app')}),
	$pg14 ? '3' : '0', "pg_stat_activity's own rule on this major");

$node->safe_psql('fair_b',
	q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity
	   WHERE usename IN ('dlock_waiter', 'dlock_app')});
$_->finish for @waiters;
$node->stop;
done_testing();
