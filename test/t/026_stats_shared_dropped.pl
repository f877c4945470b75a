# Copyright (c) 2026, the dlock developers

# With shared_preload_libraries = 'dlock' (review attack5 F4): the by-name
# slots (dlock.stats_max_names) are shared fairly between the databases
# that exist.  A dropped database's names and total go when its DROP
# DATABASE commits: its names stop holding slots, and it stops counting in
# the share of the others.  A role with CREATEDB that creates and drops
# databases which counted names cannot bring the share of the live ones
# down (before: to 0, until the server restarted).  A DROP DATABASE that
# fails keeps the database's counters.  With more databases than slots,
# each still gets one.  Every total stays exact.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('stats_dropped');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'dlock'");
$node->append_conf('postgresql.conf', 'dlock.stats_max_names = 4');
$node->start;

# tenant owns tdb, where the superuser made the extension: tenant may
# create databases from it (CREATEDB, owner of the template).
$node->safe_psql('postgres', q{
	CREATE ROLE tenant LOGIN CREATEDB;
	CREATE DATABASE tdb OWNER tenant;
	CREATE DATABASE live_a;
	CREATE DATABASE live_b;
});
$node->safe_psql($_, 'CREATE EXTENSION dlock') for qw(tdb live_a live_b);

# busy per name of a database, 'null' where unknown
my $busy = sub {
	my ($db) = @_;
	return $node->safe_psql($db, q{
		SELECT string_agg(name || ' ' || coalesce(busy::text, 'null'), ', ' ORDER BY name)
		  FROM dlock_stats});
};
my $total = sub {
	my ($db) = @_;
	return $node->safe_psql($db, 'SELECT busy FROM dlock_stats_total');
};
# names held and then asked again in db: one busy answer each
my $count = sub {
	my ($db, $role, @names) = @_;
	$node->safe_psql($db,
		join("\n",
			(map { "SELECT dlock_acquire('$_', '1 h') IS NOT NULL;" } @names),
			(map { "SELECT dlock_acquire('$_', '1 h') IS NULL;" } @names)),
		extra_params => [ '-U', $role ]);
};

# live_a fills every slot.
$count->('live_a', 'postgres', map { "a$_" } 1 .. 4);
is($busy->('live_a'), 'a1 1, a2 1, a3 1, a4 1', 'live_a holds every slot');

# tenant creates 6 databases, counts a name in each, and drops them.
for my $i (1 .. 6)
{
	$node->safe_psql('postgres', "CREATE DATABASE tmp$i TEMPLATE tdb",
		extra_params => [ '-U', 'tenant' ]);
	$count->("tmp$i", 'tenant', 'x');
	is($busy->("tmp$i"), 'x 1', "tmp$i counts its name (share of 2 databases)");
	$node->safe_psql('postgres', "DROP DATABASE tmp$i",
		extra_params => [ '-U', 'tenant' ]);
}

# live_b (share: 4 slots / 2 databases) gets 2 slots: the dropped
# databases hold none and do not count.
$count->('live_b', 'postgres', qw(b1 b2 b3));
is($busy->('live_b'), 'b1 1, b2 1, b3 null',
	'a live database gets its share after dropped ones');
my $a = $busy->('live_a');
is(scalar(() = $a =~ / 1(,|$)/g), 2, 'live_a keeps its share');
unlike($a, qr/a\d [02-9]/, "an evicted name's count is unknown, never smaller");
is($total->('live_a'), '4', "live_a's total stays exact");
is($total->('live_b'), '3', "live_b's total stays exact");

# After its reset, live_b's names count again from 0 (before, its share
# stayed 0).
$node->safe_psql('live_b', 'SELECT dlock_stats_reset()');
$node->safe_psql('live_b', q{SELECT dlock_acquire('b1', '1 h') IS NULL});
is($busy->('live_b'), 'b1 1, b2 0, b3 0', 'after a reset, known again and counting');

# A DROP DATABASE that fails (after the drop hook: a template) keeps the
# database's counters.
$node->safe_psql('postgres', 'CREATE DATABASE tmpl TEMPLATE tdb',
	extra_params => [ '-U', 'tenant' ]);
$count->('tmpl', 'tenant', 'x');
$node->safe_psql('postgres', 'ALTER DATABASE tmpl IS_TEMPLATE true');
my ($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE tmpl');
like($err, qr/cannot drop a template database/, 'the drop of a template fails');
is($busy->('tmpl'), 'x 1', 'a database whose drop failed keeps its counters');
$node->safe_psql('tmpl', q{SELECT dlock_acquire('x', '1 h') IS NULL},
	extra_params => [ '-U', 'tenant' ]);
is($busy->('tmpl'), 'x 2', 'and counts on');
is($total->('tmpl'), '2', 'its total too');
$node->safe_psql('postgres', q{
	ALTER DATABASE tmpl IS_TEMPLATE false;
	DROP DATABASE tmpl;
});

# More databases than slots (share at least 1): live_c and live_d take
# the last slots; live_e finds every database at 1 name and gets none;
# live_d dropped, live_a (reset) takes its slot; then live_f (5 databases, 4
# slots) takes one from live_a, the only one holding 2.
for my $db (qw(live_c live_d live_e live_f))
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, 'CREATE EXTENSION dlock');
}
$count->($_, 'postgres', 'c1') for qw(live_c live_d live_e);
is(join(' | ', map { $busy->($_) } qw(live_c live_d live_e)), 'c1 1 | c1 1 | c1 null',
	'live_c and live_d get a slot each, live_e none');
$node->safe_psql('postgres', 'DROP DATABASE live_d');
$node->safe_psql('live_a', 'SELECT dlock_stats_reset()');
$count->('live_a', 'postgres', 'a9');
is($busy->('live_a'), 'a1 0, a2 0, a3 0, a4 0, a9 1',
	"live_a, reset, takes the dropped database's slot");
$count->('live_f', 'postgres', 'c1');
is($busy->('live_f'), 'c1 1', 'with more databases than slots a database still gets one');
is($busy->('live_a'), 'a1 null, a2 null, a3 null, a4 null, a9 1',
	'from live_a, the only one holding 2, its least counted');
is($total->('live_a'), '1', "live_a's total stays exact");
is(join(' ', map { $total->($_) } qw(live_c live_e live_f)), '1 1 1',
	'so do the others');

$node->stop;
done_testing();
