# Copyright (c) 2026, the dlock developers

# dlock-run through a failover of a synchronous-replication cluster.
#
# dlock-run connects with a multi-host connection string and
# target_session_attrs=read-write.  The primary is stopped (immediate: a
# crash) while the command runs.
#
# 1. The standby is promoted too late (only after dlock-run has given up):
#    dlock-run stops the command and exits 70 when the lease's deadline
#    passes without a successful renewal, and leaves no process behind.
# 2. A standby of the new primary is promoted within the deadline: a
#    renewal reconnects to it, the command runs on past several TTLs and
#    finishes, the release succeeds there, and dlock-run exits with the
#    command's status (0).
#
# The renewals that carry the lease across the failover must have reached
# the synchronous standby before they returned: the connection here keeps
# synchronous_commit at its default (on); 1.1's dlock_renew forces it.

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $run =
  defined $ENV{TESTDIR} && -x "$ENV{TESTDIR}/bin/dlock-run"
  ? "$ENV{TESTDIR}/bin/dlock-run"
  : 'dlock-run';

# A primary and a synchronous standby made from its backup.
sub sync_pair
{
	my ($primary, $standby_name) = @_;
	$primary->backup("backup_$standby_name");
	my $standby = PostgreSQL::Test::Cluster->new($standby_name);
	$standby->init_from_backup($primary, "backup_$standby_name",
		has_streaming => 1);
	$standby->start;
	$primary->append_conf('postgresql.conf',
		"synchronous_standby_names = '$standby_name'");
	$primary->reload;
	$primary->poll_query_until('postgres',
		"SELECT sync_state = 'sync' FROM pg_stat_replication WHERE application_name = '$standby_name'"
	) or die "$standby_name did not become a synchronous standby";
	return $standby;
}

sub conninfo
{
	my @nodes = @_;
	return
	    'host='
	  . join(',', map { $_->host } @nodes)
	  . ' port='
	  . join(',', map { $_->port } @nodes)
	  . ' dbname=postgres target_session_attrs=read-write connect_timeout=2';
}

# start_run(CONNINFO, NAME, TTL, SECONDS): dlock-run in the background,
# running a command that writes its pid and sleeps SECONDS.
sub start_run
{
	my ($conninfo, $name, $ttl, $secs) = @_;
	my $pidfile = PostgreSQL::Test::Utils::tempdir() . "/$name.pid";
	my %r = (out => '', err => '', pidfile => $pidfile);
	$r{handle} = IPC::Run::start(
		[
			$run, '-d', $conninfo, '--name', $name, '--ttl', $ttl,
			'-k', '2s', '-v', '--', 'sh', '-c', 'echo $$ >"$0"; sleep "$1"',
			$pidfile, $secs
		],
		'>', \$r{out}, '2>', \$r{err},
		IPC::Run::timeout(120));
	my $tries = 0;
	while (!-s $pidfile)
	{
		$r{handle}->pump_nb;
		die "the command did not start: $r{err}" if ++$tries > 300;
		select(undef, undef, undef, 0.1);
	}
	$r{pid} = PostgreSQL::Test::Utils::slurp_file($pidfile);
	chomp $r{pid};
	return \%r;
}

sub finish_run
{
	my ($r) = @_;
	$r->{handle}->finish;
	return $r->{handle}->result(0);
}

sub process_gone
{
	my ($pid) = @_;
	return kill(0, $pid) ? 0 : 1;
}

my $node1 = PostgreSQL::Test::Cluster->new('node1');
$node1->init(allows_streaming => 1);
$node1->start;
$node1->safe_psql('postgres', 'CREATE EXTENSION dlock');
my $node2 = sync_pair($node1, 'node2');

# 1. Promoted too late.
my $late = start_run(conninfo($node1, $node2), 'late', '3s', 60);
$node1->stop('immediate');
my $rc = finish_run($late);
is($rc, 70, 'primary gone and no new primary within the deadline: exit 70');
like(
	$late->{err},
	qr/lost the lease on "late".*no renewal succeeded before its deadline/s,
	'the lost lease is reported');
ok(process_gone($late->{pid}), 'the command was stopped');
$node2->promote;
$node2->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'node2 was not promoted';
is($node2->safe_psql('postgres', q{SELECT count(*) FROM dlock_leases WHERE name = 'late'}),
	'1', 'the lease reached the synchronous standby');

# 2. Promoted within the deadline.
my $node3 = sync_pair($node2, 'node3');
my $fo = start_run(conninfo($node2, $node3), 'failover', '6s', 14);
my $token = $node2->safe_psql('postgres',
	q{SELECT token FROM dlock_leases WHERE name = 'failover' AND held});
sleep 2;    # let a renewal or two happen on node2
$node2->stop('immediate');
$node3->promote;
$node3->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'node3 was not promoted';
$rc = finish_run($fo);
is($rc, 0,
	'new primary within the deadline: the command ran to its end, exit 0');
like(
	$fo->{err},
	qr/renewed the lease on "failover" again after \d+ failed attempts/,
	'dlock-run reconnected to the new primary and renewed there');
unlike($fo->{err}, qr/lost the lease/, 'the lease was never reported lost');
like($fo->{err}, qr/released the lease on "failover" \(token $token\)/,
	'the release succeeded on the new primary');
is( $node3->safe_psql(
		'postgres',
		qq{SELECT held, token = $token FROM dlock_leases WHERE name = 'failover'}),
	'f|t',
	'on the new primary the lease with the same token is released');
ok(process_gone($fo->{pid}), 'no process left behind');

done_testing();
