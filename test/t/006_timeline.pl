# Copyright (c) 2026, the dlock developers

# Tokens across timelines: an asynchronous standby promoted after the
# primary died with WAL the standby never got, and point-in-time recovery to
# a point before the end of a burst of acquisitions.
#
# Tokens jump at the first draw of every new history (src/token.c): on a
# new timeline the counter moves up to the server clock in microseconds, and
# the jump is recorded in dlock_epoch.  The WAL that did not survive takes
# the counter's progress with it; the controls below show that the counter
# of the new primary is behind tokens the old primary handed out, and the
# checks that every new token is greater than all of them anyway.
#
# 1. Asynchronous standby: replication is cut, the primary runs a burst of
#    acquisitions and is killed, the standby is promoted (timeline 2).
# 2. PITR: from the base backup and the archive, recovery to a restore point
#    in the middle of the same burst, then promotion (timeline 2 of its own
#    history).
# 3. The old primary, started again on timeline 1, hands out tokens below
#    those of both new timelines.
# 4. pg_dump of the promoted standby restored into a fresh cluster
#    (timeline 1): the tokens go on above the dumped ones.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../lib";
use DlockTest;


my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1, has_archiving => 1);
$primary->start;

sub sql
{
	my ($node, $query) = @_;
	return $node->safe_psql('postgres', $query);
}

sub max_of
{
	my $max = shift;
	for (@_) { $max = $_ if $_ > $max; }
	return $max;
}

# The timeline new WAL is written on.
sub timeline
{
	my ($node) = @_;
	return sql($node,
		q{SELECT ('x' || substr(pg_walfile_name(pg_current_wal_insert_lsn()), 1, 8))::bit(32)::int}
	);
}

my @handed;    # every token the old primary handed out
my %kept;      # name => token of the leases taken before the backup

# The server clock in microseconds since 1970.
sub clock_usecs
{
	my ($node) = @_;
	return sql($node,
		q{SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint});
}

# The timeline of the latest jump recorded.
sub jump_timeline
{
	my ($node) = @_;
	return sql($node,
		'SELECT timeline FROM dlock_epoch ORDER BY floor DESC LIMIT 1');
}

my $clock_before = clock_usecs($primary);
# DLOCK_EDITION's dlock (test/run's edition switch).
install_dlock($primary, 'postgres');
for my $i (1 .. 5)
{
	my $t = sql($primary, "SELECT dlock_acquire('churn', '1 hour')");
	push @handed, $t;
	sql($primary, "SELECT dlock_release('churn', $t)");
}
for my $name ('before/1', 'before/2')
{
	$kept{$name} = sql($primary, "SELECT dlock_acquire('$name', '1 hour')");
	push @handed, $kept{$name};
}
is(timeline($primary), '1', 'primary: on timeline 1');
cmp_ok($handed[0], '>', $clock_before,
	'primary: the first draw jumped above the server clock');
is(jump_timeline($primary), '1', 'primary: the jump is recorded on timeline 1');

$primary->backup('base');

# An asynchronous standby, caught up, then cut off.
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->append_conf('postgresql.conf', 'archive_mode = off');
$standby->start;
$primary->wait_for_catchup($standby);
is( sql($standby, q{SELECT string_agg(name || '=' || token, ',' ORDER BY name) FROM dlock_leases WHERE held}),
	"before/1=$kept{'before/1'},before/2=$kept{'before/2'}",
	'standby: has the leases taken before the cut');
$standby->stop;

# The burst: more acquisitions than the counter WAL-logs ahead (32) before
# and after a restore point, so that neither the standby nor the recovery
# target can have the counter past the burst's end.
my $session = $primary->background_psql('postgres');
$session->query_safe('SET synchronous_commit = off');
my (@first_half, @second_half);
for my $i (1 .. 20)
{
	push @first_half,
	  $session->query_safe("SELECT dlock_acquire('burst/$i', '1 hour')");
}
sql($primary, q{SELECT pg_create_restore_point('mid_burst')});
for my $i (21 .. 60)
{
	push @second_half,
	  $session->query_safe("SELECT dlock_acquire('burst/$i', '1 hour')");
}
$session->quit;
push @handed, @first_half, @second_half;
my $max_handed = max_of(@handed);
is($max_handed, $second_half[-1], 'primary: the burst ends with the highest token');

# Archive the burst's WAL for the PITR case, then kill the primary.
my $walfile = sql($primary, 'SELECT pg_walfile_name(pg_current_wal_lsn())');
sql($primary, 'SELECT pg_switch_wal()');
ok( $primary->poll_query_until(
		'postgres', "SELECT last_archived_wal >= '$walfile' FROM pg_stat_archiver"),
	'primary: the burst is archived');
my ($postmaster_pid) =
  split /\n/, slurp_file($primary->data_dir . '/postmaster.pid');
$primary->kill9;

# 1. The asynchronous standby, without the burst, is promoted.
$standby->start;
is(sql($standby, q{SELECT count(*) FROM dlock_leases WHERE name LIKE 'burst/%'}),
	'0', 'standby: the burst never reached it');
cmp_ok(sql($standby, 'SELECT last_value FROM dlock_token_seq'),
	'<', $max_handed,
	'control: the standby\'s counter is behind tokens the old primary handed out');

$standby->promote;
ok($standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()'),
	'standby: promoted');
is(timeline($standby), '2', 'standby: on timeline 2');

my @standby_tokens;
for my $i (1 .. 3)
{
	push @standby_tokens,
	  sql($standby, "SELECT dlock_acquire('burst/$i', '1 hour')");
}
cmp_ok($standby_tokens[0], '>', $max_handed,
	'standby: the first new token beats every token the old primary handed out');
is(jump_timeline($standby), '2', 'standby: jumped on timeline 2');
ok($standby_tokens[1] > $standby_tokens[0] && $standby_tokens[2] > $standby_tokens[1],
	'standby: tokens keep growing');
is( sql($standby, q{SELECT string_agg(name || '=' || token, ',' ORDER BY name) FROM dlock_leases WHERE name LIKE 'before/%' AND held}),
	"before/1=$kept{'before/1'},before/2=$kept{'before/2'}",
	'standby: the leases taken before the cut are still held');

# 2. Point-in-time recovery to the middle of the burst.
my $pitr = PostgreSQL::Test::Cluster->new('pitr');
$pitr->init_from_backup($primary, 'base', has_restoring => 1, standby => 0);
$pitr->append_conf(
	'postgresql.conf', q{
archive_mode = off
recovery_target_name = 'mid_burst'
recovery_target_action = 'pause'
});
$pitr->start;
ok( $pitr->poll_query_until(
		'postgres', 'SELECT pg_get_wal_replay_pause_state()', 'paused'),
	'pitr: recovery paused at the restore point');
is( sql($pitr,
		q{SELECT count(*) FILTER (WHERE name IN ('burst/1', 'burst/20')) || '/' || count(*)
	  FROM dlock_leases WHERE name LIKE 'burst/%'}),
	'2/20',
	'pitr: recovered the first half of the burst, none of the second');
cmp_ok(sql($pitr, 'SELECT last_value FROM dlock_token_seq'),
	'<', $max_handed,
	'control: the recovered counter is behind tokens the old primary handed out');

sql($pitr, 'SELECT pg_wal_replay_resume()');
ok($pitr->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()'),
	'pitr: promoted');
is(timeline($pitr), '2', 'pitr: on a new timeline');

my $pitr_first = sql($pitr, q{SELECT dlock_acquire('burst/60', '1 hour')});
cmp_ok($pitr_first, '>', $max_handed,
	'pitr: the first new token beats every token the old primary handed out');
is(jump_timeline($pitr), '2', 'pitr: jumped on its timeline 2');
my $pitr_second = sql($pitr, q{SELECT dlock_acquire('burst/21', '1 hour')});
cmp_ok($pitr_second, '>', $pitr_first, 'pitr: tokens keep growing');
is( sql($pitr, q{SELECT held, token FROM dlock_leases WHERE name = 'burst/20'}),
	"t|$first_half[-1]",
	'pitr: a lease of the first half is held with its token');
is(sql($pitr, q{SELECT dlock_acquire('burst/20', '1 hour')}),
	'', 'pitr: and cannot be taken');

# 3. The old primary, started again, stays on timeline 1: its new tokens
# beat its own old ones and stay below both new timelines.  Its killed
# postmaster must be gone first (reaped by init), or the start refuses.
my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
select(undef, undef, undef, 0.1)
  while kill(0, $postmaster_pid) && time < $deadline;
$primary->start;
is(timeline($primary), '1', 'old primary: still on timeline 1');
my $old_new = sql($primary, q{SELECT dlock_acquire('old/after', '1 hour')});
cmp_ok($old_new, '>', $max_handed,
	'old primary: its next token beats its own earlier ones');
cmp_ok($old_new, '<', $standby_tokens[0],
	'old primary: its tokens stay below the promoted standby\'s');
cmp_ok($old_new, '<', $pitr_first,
	'old primary: its tokens stay below the PITR node\'s');
$primary->stop;
note "old primary: up to $max_handed before the failover, $old_new after;"
  . " promoted standby from $standby_tokens[0], PITR node from $pitr_first";

# 4. A dump of the promoted standby, restored into a fresh cluster on
# timeline 1.
my $tmp = PostgreSQL::Test::Utils::tempdir();
$standby->command_ok(
	[ 'pg_dump', '-Fc', '-f', "$tmp/standby.dump", '-d', $standby->connstr('postgres') ],
	'pg_dump of the promoted standby');
my $fresh = PostgreSQL::Test::Cluster->new('fresh');
$fresh->init;
$fresh->start;
$fresh->safe_psql('postgres', 'CREATE DATABASE app');
$fresh->command_ok(
	[ 'pg_restore', '--exit-on-error', '-d', $fresh->connstr('app'), "$tmp/standby.dump" ],
	'restored into a fresh cluster');
is(timeline($fresh), '1', 'fresh cluster: on timeline 1');
my $fresh_first = $fresh->safe_psql('app', q{SELECT dlock_acquire('fresh', '1 hour')});
cmp_ok($fresh_first, '>', $standby_tokens[2],
	'fresh cluster: the first new token beats every dumped token');
is( $fresh->safe_psql('app', q{SELECT held, token FROM dlock_leases WHERE name = 'burst/3'}),
	"t|$standby_tokens[2]",
	'fresh cluster: the dumped lease is held with its token');

$fresh->stop;
$pitr->stop;
$standby->stop;

done_testing();
