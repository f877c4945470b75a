# Copyright (c) 2026, the dlock developers

# Streaming replication with a synchronous hot standby.
#
# 1. On the hot standby, every call that would change or vouch for a lease
#    fails with 25006 (acquire, owner renewal, release, renew, check,
#    assert, a write through the dlock_fence trigger), whatever the token;
#    reading dlock_leases works and shows the primary's leases.
# 2. An acquire made with synchronous_commit = off on the primary still
#    waits for the synchronous standby (seen in pg_stat_activity as a
#    SyncRep wait while the standby is down), and so does a dlock_renew
#    followed by SET LOCAL synchronous_commit = local, while an ordinary
#    asynchronous commit and a release do not wait.
# 3. A stream of acquisitions with synchronous_commit = off, then the
#    primary dies (SIGKILL) right after an acquire, with an asynchronous
#    commit behind it that never left the primary (its WAL writer is
#    stopped), and the standby is promoted.  On the new primary: the lost
#    commit is missing (the control), every lease whose acquire returned is
#    held with its token, the counter is past every token the old primary
#    returned, and new tokens are greater than all of them.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../lib";
use DlockTest;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);

# Unflushed WAL stays unflushed: no autovacuum commit or background writer
# flushes it, and the WAL writer is stopped before the failover.
$primary->append_conf(
	'postgresql.conf', q{
wal_writer_delay = '10s'
autovacuum = off
bgwriter_lru_maxpages = 0
});
$primary->start;

sub sql
{
	my ($node, $query) = @_;
	return $node->safe_psql('postgres', $query);
}

# A query's SQLSTATE, or '' when it succeeds.
sub sqlstate
{
	my ($node, $query) = @_;
	return query_sqlstate($node, 'postgres', $query);
}

sub max_of
{
	my $max = shift;
	for (@_) { $max = $_ if $_ > $max; }
	return $max;
}

my @returned;    # every token the primary returned
my %kept;        # name => token of every lease acquired and kept

sub acquire
{
	my ($node, $name, $owner) = @_;
	my $owner_sql = defined $owner ? "'$owner'" : 'NULL';
	my $t = sql($node,
		"SELECT dlock_acquire('$name', '1 hour', '0', $owner_sql)");
	push @returned, $t if $node == $primary;
	return $t;
}

sql(
	$primary, q{CREATE EXTENSION dlock;
CREATE TABLE control (id int);
CREATE TABLE payout (order_id int, token bigint);
CREATE TRIGGER payout_fence BEFORE INSERT OR UPDATE ON payout
	FOR EACH ROW EXECUTE FUNCTION dlock_fence('payouts', 'token');});

$kept{'held/anon'} = acquire($primary, 'held/anon');
$kept{'held/owned'} = acquire($primary, 'held/owned', 'pod-1');
$kept{payouts} = acquire($primary, 'payouts');
my $released = acquire($primary, 'released');
is(sql($primary, "SELECT dlock_release('released', $released)"),
	't', 'primary: released lease released');
sql($primary, "INSERT INTO payout VALUES (1, $kept{payouts})");

$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;

# The standby connects with application_name = its cluster_name, "standby".
$primary->append_conf('postgresql.conf', "synchronous_standby_names = 'standby'");
$primary->reload;
ok( $primary->poll_query_until(
		'postgres',
		q{SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby'},
		'sync'),
	'the standby is synchronous');
$primary->wait_for_catchup($standby);

# 1. The hot standby.
is(sql($standby, 'SELECT pg_is_in_recovery()'), 't', 'standby: in recovery');

my $leases_query = q{SELECT name, owner, token, acquired_at, expires_at, released_at, held, role
  FROM dlock_leases ORDER BY name COLLATE "C"};
is(sql($standby, $leases_query), sql($primary, $leases_query),
	'standby: dlock_leases reads the same leases as on the primary');
is( sql($standby,
		q{SELECT string_agg(name || '=' || held, ',' ORDER BY name COLLATE "C") FROM dlock_leases}),
	'held/anon=true,held/owned=true,payouts=true,released=false',
	'standby: the held leases read as held');

my %refused = (
	'acquire of a new name' => q{SELECT dlock_acquire('standby/new', '1 hour')},
	'acquire of a released name' => q{SELECT dlock_acquire('released', '1 hour')},
	'owner renewal through acquire' =>
	  q{SELECT dlock_acquire('held/owned', '1 hour', '0', 'pod-1')},
	'acquire with a wait' =>
	  q{SELECT dlock_acquire('held/anon', '1 hour', '1 s')},
	'release with the token' =>
	  "SELECT dlock_release('held/anon', $kept{'held/anon'})",
	'release with a stale token' =>
	  "SELECT dlock_release('released', $released)",
	'renew with the token' =>
	  "SELECT dlock_renew('held/anon', $kept{'held/anon'}, '1 hour')",
	'check with the token' =>
	  "SELECT dlock_check('held/anon', $kept{'held/anon'})",
	'check with a stale token' =>
	  "SELECT dlock_check('released', $released)",
	'check of a never acquired name' => "SELECT dlock_check('nothing', 1)",
	'dlock_remaining with the token' =>
	  "SELECT dlock_remaining('held/anon', $kept{'held/anon'})",
	'assert with the token' =>
	  "SELECT dlock_assert('held/anon', $kept{'held/anon'})",
	'assert with a stale token' =>
	  "SELECT dlock_assert('released', $released)",
	'insert through the fence trigger' =>
	  "INSERT INTO payout VALUES (2, $kept{payouts})",
	'update through the fence trigger' =>
	  "UPDATE payout SET order_id = 3 WHERE token = $kept{payouts}",);
for my $what (sort keys %refused)
{
	is(sqlstate($standby, $refused{$what}), '25006', "standby: $what fails with 25006");
}
is( sql($standby,
		q{SELECT string_agg(name || '=' || held, ',' ORDER BY name COLLATE "C") FROM dlock_leases}),
	'held/anon=true,held/owned=true,payouts=true,released=false',
	'standby: the refused calls changed nothing');

# The primary still vouches for its own leases, and nothing changed there.
is(sql($primary, "SELECT dlock_check('held/anon', $kept{'held/anon'})"),
	't', 'primary: dlock_check vouches for held/anon');
is(sql($primary, 'SELECT count(*) FROM payout'),
	'1', 'primary: the fenced table is unchanged');

# 2. synchronous_commit = off does not let an acquire skip the standby.
my $session = $primary->background_psql('postgres');
my $pid = $session->query_safe('SELECT pg_backend_pid()');
$session->query_safe('SET synchronous_commit = off');

$standby->stop;
is($session->query_safe('INSERT INTO control VALUES (0); SELECT 1'),
	'1', 'standby down: an asynchronous insert does not wait for it');
is( $session->query_safe(
		"SELECT dlock_release('held/anon', $kept{'held/anon'})"),
	't',
	'standby down: an asynchronous release does not wait for it');
delete $kept{'held/anon'};

# Send the acquire without waiting for its result.
$session->{stdin} .= "SELECT dlock_acquire('sync/while-down', '1 hour');\n";
$session->{run}->pump_nb;
my $wait_event = '';
my $deadline = time + 30;
while (time < $deadline)
{
	$wait_event =
	  sql($primary, "SELECT wait_event FROM pg_stat_activity WHERE pid = $pid");
	last if $wait_event eq 'SyncRep';
	$session->{run}->pump_nb;
	last if $session->{stdout} =~ /^\d+$/m;    # returned without waiting
	select(undef, undef, undef, 0.05);
}
is($wait_event, 'SyncRep',
	'standby down: the acquire waits for the synchronous standby');
select(undef, undef, undef, 0.5);
$session->{run}->pump_nb;
is($session->{stdout}, '', 'standby down: half a second later it has not returned');
is(sql($primary, "SELECT wait_event FROM pg_stat_activity WHERE pid = $pid"),
	'SyncRep', 'standby down: the acquire is still waiting');

$standby->start;
my ($t_down, $sc) = split /\n/, $session->query_safe('SHOW synchronous_commit');
like($t_down, qr/^\d+$/, 'standby back: the acquire returned a token');
is($sc, 'off', 'standby back: the session is still at synchronous_commit = off');
push @returned, $t_down;
$kept{'sync/while-down'} = $t_down;
cmp_ok($t_down, '>', max_of(@returned[ 0 .. $#returned - 1 ]),
	'standby back: the token beats the earlier ones');
$primary->wait_for_catchup($standby);

# dlock_renew commits the way dlock_acquire does: it waits for the
# synchronous standby too, even with a SET LOCAL after the call.
$standby->stop;
$session->{stdin} .= "BEGIN; SELECT dlock_renew('sync/while-down', $t_down, '2 hours'); SET LOCAL synchronous_commit = local; COMMIT;\n";
$session->{run}->pump_nb;
$wait_event = '';
$deadline = time + 30;
while (time < $deadline)
{
	$wait_event =
	  sql($primary, "SELECT wait_event FROM pg_stat_activity WHERE pid = $pid");
	last if $wait_event eq 'SyncRep';
	$session->{run}->pump_nb;
	last if $session->{stdout} =~ /^t$/m;    # returned without waiting
	select(undef, undef, undef, 0.05);
}
is($wait_event, 'SyncRep',
	'standby down: the renewal waits for the synchronous standby');
$standby->start;
my ($renewed) = split /\n/, $session->query_safe('SHOW synchronous_commit');
is($renewed, 't', 'standby back: the renewal returned true');
$primary->wait_for_catchup($standby);
is( sql($standby,
		"SELECT expires_at > now() + interval '90 minutes' FROM dlock_leases WHERE name = 'sync/while-down'"),
	't',
	'standby: it has the renewed expiry');

# 3. A stream of acquisitions with synchronous_commit = off, some released;
# then failover.
for my $i (1 .. 30)
{
	my $t = $session->query_safe("SELECT dlock_acquire('stream/$i', '1 hour')");
	push @returned, $t;
	if ($i % 3 == 0)
	{
		is($session->query_safe("SELECT dlock_release('stream/$i', $t)"),
			't', "stream: stream/$i released");
	}
	else
	{
		$kept{"stream/$i"} = $t;
	}
}

# Nothing flushes the primary's WAL but the backends themselves from here on.
my $walwriter = sql($primary,
	q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'walwriter'});
like($walwriter, qr/^\d+$/, 'primary: found the WAL writer');
is(kill('STOP', $walwriter), 1, 'primary: WAL writer stopped');

my $t_last = $session->query_safe(q{SELECT dlock_acquire('last', '1 hour')});
push @returned, $t_last;
$kept{last} = $t_last;
$session->query_safe('INSERT INTO control VALUES (1)');

$primary->kill9;
kill('KILL', $walwriter);
$session->quit;
my $max_returned = max_of(@returned);

$standby->promote;
ok($standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()'),
	'standby promoted');

is(sql($standby, 'SELECT count(*) FROM control WHERE id = 1'),
	'0',
	'control: the asynchronous commit after the last acquire never reached the standby'
);

my $values = join(', ', map { "('$_', $kept{$_})" } sort keys %kept);
is( sql(
		$standby, qq{SELECT coalesce(string_agg(v.name || ' ' || v.token || ': '
	|| coalesce(l.token::text || CASE WHEN l.held THEN ' held' ELSE ' free' END, 'missing'),
	'; ' ORDER BY v.name), '')
  FROM (VALUES $values) AS v(name, token)
  LEFT JOIN dlock_leases AS l USING (name)
 WHERE l.name IS NULL OR NOT l.held OR l.token <> v.token}),
	'',
	'promoted: every lease whose acquire returned is held with its token');
is(sql($standby, q{SELECT held, token FROM dlock_leases WHERE name = 'last'}),
	"t|$t_last", 'promoted: the last acquire before the failover is held');

# The counter itself came over: past every token the old primary returned,
# before any draw on the new timeline.
cmp_ok(sql($standby, 'SELECT last_value FROM dlock_token_seq'),
	'>=', $max_returned,
	'promoted: the token counter is past every token the old primary returned');

my $t_new = acquire($standby, 'after/1');
cmp_ok($t_new, '>', $max_returned,
	'promoted: the first new token beats every token the old primary returned');
cmp_ok(acquire($standby, 'after/2'), '>', $t_new,
	'promoted: tokens keep growing');

is(acquire($standby, 'held/owned', 'pod-2'), '',
	'promoted: another owner cannot take held/owned');
is(acquire($standby, 'held/owned', 'pod-1'), $kept{'held/owned'},
	'promoted: the owner renews held/owned and keeps its token');
is(sql($standby, "SELECT dlock_check('payouts', $kept{payouts})"),
	't', 'promoted: dlock_check vouches for payouts');
is(sqlstate($standby, "INSERT INTO payout VALUES (2, $kept{payouts})"),
	'', 'promoted: the holder of payouts writes through the fence');
is(sqlstate($standby, "INSERT INTO payout VALUES (3, $released)"),
	'LK001', 'promoted: a stale token is rejected by the fence');
is(sql($standby, "SELECT dlock_release('last', $t_last)"),
	't', 'promoted: the last lease is released with its token');

$standby->stop;

done_testing();
