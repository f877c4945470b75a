# Copyright (c) 2026, the dlock developers

# A logical-replication cut-over, exactly as docs/tokens.md describes it:
# publish the lease table, subscribe, stop the clients on the old server,
# wait until the subscriber has everything, drop the subscription, call
# dlock_rebase() on the new server, move the clients over.
#
# The new server installed dlock and drew tokens before the old one did,
# so its counter is below the old server's tokens (the control); after the
# cut-over every new token is above every token the old server handed out,
# including one that is only in the old server's counter (an acquire that
# rolled back), for any name and for its own name.

use strict;
use warnings;

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

my $new = PostgreSQL::Test::Cluster->new('new');
$new->init;
$new->start;
# DLOCK_EDITION's dlock (test/run's edition switch).
install_dlock($new, 'postgres');
my $early = $new->safe_psql('postgres', q{SELECT dlock_acquire('early', '1 hour')});

my $old = PostgreSQL::Test::Cluster->new('old');
$old->init(allows_streaming => 'logical');
$old->start;
install_dlock($old, 'postgres');

my @handed;
my %last;
for my $i (1 .. 10)
{
	my $name = "job/" . ($i % 4);
	my $t = $old->safe_psql('postgres', "SELECT dlock_acquire('$name', '1 hour')");
	push @handed, $t;
	$last{$name} = $t;
	$old->safe_psql('postgres', "SELECT dlock_release('$name', $t)") if $i < 10;
}
push @handed, $old->safe_psql('postgres',
	q{BEGIN; SELECT dlock_acquire('rolled-back', '1 hour'); ROLLBACK;});
cmp_ok($early, '<', $handed[0], 'control: the new server drew first, below the old one');

# The documented procedure.
# The SQL edition keeps a lease in two rows (docs/editions.md, "the lease
# table's shape"), with its queue row: the publication carries all three.
my $tables = dlock_edition() eq 'sql' ? 'dlock_lease, dlock_expiry, dlock_sql_queue' : 'dlock_lease';
$old->safe_psql('postgres', "CREATE PUBLICATION dlock_pub FOR TABLE $tables");
(my $connstr = $old->connstr('postgres')) =~ s/'/''/g;
$new->safe_psql('postgres',
	"CREATE SUBSCRIPTION dlock_sub CONNECTION '$connstr' PUBLICATION dlock_pub");
ok( $new->poll_query_until('postgres',
		q{SELECT count(*) = 0 FROM pg_subscription_rel WHERE srsubstate NOT IN ('r', 's')}),
	'subscriber: the initial copy is done');
$old->wait_for_catchup('dlock_sub');

# Leases taken while the subscription runs come over too.
my $late = $old->safe_psql('postgres', q{SELECT dlock_acquire('late', '1 hour')});
push @handed, $late;
$last{late} = $late;
$old->wait_for_catchup('dlock_sub');
is( $new->safe_psql('postgres',
		q{SELECT string_agg(name || '=' || token, ',' ORDER BY name) FROM dlock_lease WHERE name <> 'early'}),
	join(',', map { "$_=$last{$_}" } sort keys %last),
	'subscriber: every lease row came over');
is($new->safe_psql('postgres', q{SELECT dlock_acquire('late', '1 hour')}),
	'', 'subscriber: a lease held on the old server is held on the new one');
cmp_ok($new->safe_psql('postgres', 'SELECT last_value FROM dlock_token_seq'),
	'<', max_of(@handed),
	'control: the new server\'s counter is below the old server\'s tokens');

# Cut over.
$new->safe_psql('postgres', 'DROP SUBSCRIPTION dlock_sub');
my $floor = $new->safe_psql('postgres', 'SELECT dlock_rebase()');
cmp_ok($floor, '>', max_of(@handed), 'dlock_rebase: the floor is above the old server\'s tokens');

my $t_new = $new->safe_psql('postgres', q{SELECT dlock_acquire('new/1', '1 hour')});
cmp_ok($t_new, '>', max_of(@handed), 'cut over: a new name gets a token above every earlier one');
my $t_job = $new->safe_psql('postgres', q{SELECT dlock_acquire('job/1', '1 hour')});
cmp_ok($t_job, '>', $last{'job/1'}, 'cut over: a carried-over name gets a token above its last');
cmp_ok($t_job, '>', $t_new, 'cut over: tokens keep rising');
is($new->safe_psql('postgres', "SELECT dlock_release('late', $late)"),
	't', 'cut over: the holder of a carried-over lease releases it with its token');

# A FOR ALL TABLES publication (review 2, finding 3): it publishes
# dlock_lock_key too, whose row the subscriber must not take: the initial
# copy and the stream apply it in replica mode, where the table's REPLICA
# trigger skips it.  The subscriber keeps its one row, its own secret, and
# new backends there acquire.
SKIP:
{
	# The lock key exists only in the C edition (test/sql_edition/same's
	# differences: no advisory locks in the SQL edition).
	skip 'the C edition\'s lock key table (the SQL edition has none)', 6 if dlock_edition() eq 'sql';
	$old->safe_psql('postgres', 'CREATE PUBLICATION dlock_all FOR ALL TABLES');
	$new->safe_psql('postgres', 'CREATE DATABASE allsub');
	install_dlock($new, 'allsub');
	my $own = $new->safe_psql('allsub', 'SELECT secret FROM dlock_lock_key');
	$new->safe_psql('allsub',
		"CREATE SUBSCRIPTION dlock_all_sub CONNECTION '$connstr' PUBLICATION dlock_all");
	ok( $new->poll_query_until('allsub',
			q{SELECT count(*) = 0 FROM pg_subscription_rel WHERE srsubstate NOT IN ('r', 's')}),
		'FOR ALL TABLES: the initial copy is done');
	$old->wait_for_catchup('dlock_all_sub');
	is($new->safe_psql('allsub', 'SELECT count(*) FROM dlock_lease WHERE name = \'late\''),
		'1', 'FOR ALL TABLES: the lease rows came over');
	is($new->safe_psql('allsub', 'SELECT count(*) FROM dlock_lock_key'),
		'1', 'FOR ALL TABLES: the subscriber has one lock key row');
	is($new->safe_psql('allsub', 'SELECT secret FROM dlock_lock_key'),
		$own, 'FOR ALL TABLES: the subscriber keeps its own secret');
	isnt($own, $old->safe_psql('postgres', 'SELECT secret FROM dlock_lock_key'),
		'control: the two secrets differ');
	like($new->safe_psql('allsub', q{SELECT dlock_acquire('all/1', '1 hour')}),
		qr/^\d+$/, 'FOR ALL TABLES: a new backend of the subscriber acquires');
	$new->safe_psql('allsub', 'DROP SUBSCRIPTION dlock_all_sub');
}

$old->stop;
$new->stop;

done_testing();
