# Copyright (c) 2026, the dlock developers

# Tokens across a move into another cluster followed by an asynchronous
# failover there (src/token.c): two histories that start from the same
# moved state must end up apart.
#
# 1. pg_dump of a database, restored into a fresh cluster.  Its
#    asynchronous standby is cut off right after the restore, before the new
#    primary's first draw; the new primary hands out a burst of tokens and
#    dies; the standby is promoted.
# 2. The same after pg_upgrade (the binaries under test, into a new data
#    directory) instead of a dump.
#
# Each time the promoted standby's first tokens are above every token handed
# out before, by the source and by the primary that died, for any name and
# for their own names.

use strict;
use warnings;

use Cwd;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../lib";
use DlockTest;

sub max_of
{
	my $max = 0;
	for (@_) { $max = $_ if $_ > $max; }
	return $max;
}

# A source database with leases of every kind; returns its tokens.
sub fill_source
{
	my ($node, $db) = @_;
	my @t;
	# DLOCK_EDITION's dlock (test/run's edition switch).
	install_dlock($node, $db);
	for my $i (1 .. 5)
	{
		my $t = $node->safe_psql($db, "SELECT dlock_acquire('src/$i', '1 hour')");
		push @t, $t;
		$node->safe_psql($db, "SELECT dlock_release('src/$i', $t)") if $i % 2;
	}
	# Only in the counter: an acquire that rolled back.
	push @t, $node->safe_psql($db,
		q{BEGIN; SELECT dlock_acquire('rolled-back', '1 hour'); ROLLBACK;});
	return @t;
}

# On primary (already holding the moved database $db): a standby cut off at
# once, a burst, a crash, the promotion; then the checks.
sub burst_and_failover
{
	my ($label, $primary, $db, @before) = @_;

	$primary->backup("${label}_base");
	my $standby = PostgreSQL::Test::Cluster->new("${label}_standby");
	$standby->init_from_backup($primary, "${label}_base", has_streaming => 1);
	# The standby never sees anything after the move.
	$standby->start;
	$primary->wait_for_catchup($standby);
	$standby->stop;

	my @burst;
	my $session = $primary->background_psql($db);
	$session->query_safe('SET synchronous_commit = off');
	for my $i (1 .. 40)
	{
		push @burst, $session->query_safe(
			"SELECT dlock_acquire('" . ($i <= 3 ? 'src/' . (2 * $i - 1) : "burst/$i") . "', '1 hour')");
	}
	$session->quit;
	like(join(',', @burst), qr/^\d+(,\d+)*$/, "$label: the new primary handed out a burst");
	cmp_ok($burst[0], '>', max_of(@before),
		"$label: the new primary's first token is above the source's");
	$primary->stop('immediate');

	$standby->start;
	is($standby->safe_psql($db, q{SELECT count(*) FROM dlock_lease WHERE name LIKE 'burst/%'}),
		'0', "$label: control: the burst never reached the standby");
	cmp_ok($standby->safe_psql($db, 'SELECT last_value FROM dlock_token_seq'),
		'<', max_of(@burst),
		"$label: control: the standby's counter is behind the burst");
	$standby->promote;
	ok($standby->poll_query_until($db, 'SELECT NOT pg_is_in_recovery()'),
		"$label: standby promoted");

	my $everything = max_of(@before, @burst);
	my $t1 = $standby->safe_psql($db, q{SELECT dlock_acquire('after/1', '1 hour')});
	cmp_ok($t1, '>', $everything,
		"$label: the promoted standby's first token is above every earlier token");
	my $t2 = $standby->safe_psql($db, q{SELECT dlock_acquire('burst/7', '1 hour')});
	cmp_ok($t2, '>', $everything, "$label: a name of the lost burst gets a token above it");
	my $t3 = $standby->safe_psql($db, q{SELECT dlock_acquire('src/1', '1 hour')});
	cmp_ok($t3, '>', $everything, "$label: a name of the source gets a token above it");
	ok($t2 > $t1 && $t3 > $t2, "$label: tokens keep rising");
	is( $standby->safe_psql($db,
			'SELECT timeline FROM dlock_epoch ORDER BY floor DESC LIMIT 1'),
		'2',
		"$label: the jump is recorded on the new timeline");
	$standby->stop;
}

# 1. pg_dump and restore into a fresh cluster, then the failover there.
my $src = PostgreSQL::Test::Cluster->new('src');
$src->init;
$src->start;
$src->safe_psql('postgres', 'CREATE DATABASE app');
my @src_tokens = fill_source($src, 'app');
my $tmp = PostgreSQL::Test::Utils::tempdir();
$src->command_ok([ 'pg_dump', '-Fc', '-f', "$tmp/app.dump", '-d', $src->connstr('app') ],
	'restore: pg_dump');
$src->stop;

my $restored = PostgreSQL::Test::Cluster->new('restored');
$restored->init(allows_streaming => 1);
$restored->start;
$restored->safe_psql('postgres', 'CREATE DATABASE app');
$restored->command_ok(
	[ 'pg_restore', '--exit-on-error', '-d', $restored->connstr('app'), "$tmp/app.dump" ],
	'restore: pg_restore into a fresh cluster');
burst_and_failover('restore', $restored, 'app', @src_tokens);

# 2. pg_upgrade into a new data directory, then the failover there.
my $old = PostgreSQL::Test::Cluster->new('old');
$old->init;
$old->start;
my @old_tokens = fill_source($old, 'postgres');
$old->stop;

my $new = PostgreSQL::Test::Cluster->new('new');
$new->init(allows_streaming => 1);
# The binaries of the installation under test (PGXS puts them first on PATH).
chomp(my $bindir = `pg_config --bindir`);
my $cwd = getcwd();
chdir $tmp;
command_ok(
	[
		"$bindir/pg_upgrade",
		'-d', $old->data_dir, '-D', $new->data_dir,
		'-b', $bindir, '-B', $bindir,
		'-s', $new->host, '-p', $old->port, '-P', $new->port
	],
	'upgrade: pg_upgrade into a new data directory');
chdir $cwd;
$new->start;
is($new->safe_psql('postgres', q{SELECT held FROM dlock_leases WHERE name = 'src/2'}),
	't', 'upgrade: a held lease came over');
burst_and_failover('upgrade', $new, 'postgres', @old_tokens);

done_testing();
