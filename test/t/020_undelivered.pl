# Copyright (c) 2026, the dlock developers

# A committed acquire whose token cannot be sent to the client is released
# before the backend exits (issue 24 item 6; src/undelivered.c).  The failed
# send is forced, not raced: the acquire's commit waits for a synchronous
# standby that does not exist, its client (psql over the Unix socket) is
# killed meanwhile, and the wait is then cancelled: PostgreSQL sends the
# warning "canceling wait for synchronous replication" into the closed
# socket during the commit, the send fails (ClientConnectionLost), the
# commit stands, and the backend ends with "connection to client lost".
# The control: a client that read its token and then died keeps the lease.
# Asserted by state (the lease row, the log), with generous waits.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use DlockTest;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('undelivered');
$node->init(allows_streaming => 1);	# max_wal_senders > 0
$node->start;

sub sql
{
	my ($query) = @_;
	return $node->safe_psql('postgres', $query);
}

sql('CREATE EXTENSION dlock');

# The control first: a client that read its token, then was killed while
# its backend sat idle.  Its backend sees the end of the connection (no
# failed send) and leaves the lease to the token's holder.
my ($cin, $cout, $cerr) = ("SELECT dlock_acquire('kept', '1 hour');\n", '', '');
my $c = IPC::Run::start(
	[ 'psql', '-X', '-q', '-A', '-t', '-d', $node->connstr('postgres') ],
	'<', \$cin, '>', \$cout, '2>', \$cerr);
$c->pump until $cout =~ /^\d+$/m;
my $kept_pid = sql(q{SELECT pid FROM pg_catalog.pg_stat_activity
	WHERE query LIKE '%''kept''%' AND pid <> pg_backend_pid()});
$c->signal('KILL');
$c->finish;
ok( $node->poll_query_until(
		'postgres', qq{SELECT count(*) = 0 FROM pg_catalog.pg_stat_activity
		WHERE pid = $kept_pid}),
	'the backend of the client that read its token exits');
is(sql(q{SELECT held FROM dlock_leases WHERE name = 'kept'}),
	't', 'a lease whose token the client read stays held');

# Every commit that waits for a synchronous standby now waits for good
# (a restart: the checkpointer has set sync_standbys_defined by the time
# connections are accepted).
$node->append_conf('postgresql.conf', "synchronous_standby_names = 'ghost'\n");
$node->restart;

my ($out, $err) = ('', '');
my $h = IPC::Run::start(
	[
		'psql', '-X', '-q', '-d', $node->connstr('postgres'), '-c',
		"SELECT dlock_acquire('undelivered', '1 hour', '0', 'lost')"
	],
	'>', \$out, '2>', \$err);
ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) = 1 FROM pg_catalog.pg_stat_activity
		WHERE wait_event = 'SyncRep' AND query LIKE '%''lost'')'}),
	'the acquire commits and waits for the synchronous standby');
my $pid = sql(q{SELECT pid FROM pg_catalog.pg_stat_activity
	WHERE wait_event = 'SyncRep' AND query LIKE '%''lost'')'});
$h->signal('KILL');
$h->finish;
sql("SELECT pg_catalog.pg_cancel_backend($pid)");
ok( $node->poll_query_until(
		'postgres', qq{SELECT count(*) = 0 FROM pg_catalog.pg_stat_activity
		WHERE pid = $pid}),
	'the backend whose client was lost exits');
is( sql(q{SELECT token IS NOT NULL AND NOT held FROM dlock_leases
	WHERE name = 'undelivered'}),
	't', 'the committed lease whose token was never sent is released');
# One connection, two messages: the first acquire's result is delivered
# (its wait is cancelled while the client lives), the second's is not.
# Only the second lease is released: the backend read a message after the
# first result, so that one may have reached the client.
($out, $err) = ('', '');
$h = IPC::Run::start(
	[
		'psql', '-X', '-q', '-d', $node->connstr('postgres'),
		'-c', "SELECT dlock_acquire('read', '1 hour')",
		'-c', "SELECT dlock_acquire('second', '1 hour')"
	],
	'>', \$out, '2>', \$err);
ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) = 1 FROM pg_catalog.pg_stat_activity
		WHERE wait_event = 'SyncRep' AND query LIKE '%''read''%'}),
	'the first acquire waits for the synchronous standby');
$pid = sql(q{SELECT pid FROM pg_catalog.pg_stat_activity
	WHERE wait_event = 'SyncRep' AND query LIKE '%''read''%'});
sql("SELECT pg_catalog.pg_cancel_backend($pid)");
ok( $node->poll_query_until(
		'postgres', qq{SELECT count(*) = 1 FROM pg_catalog.pg_stat_activity
		WHERE wait_event = 'SyncRep' AND query LIKE '%''second''%'
		AND pid = $pid}),
	'the second acquire, in the same backend, waits');
$h->signal('KILL');
$h->finish;
sql("SELECT pg_catalog.pg_cancel_backend($pid)");
ok( $node->poll_query_until(
		'postgres', qq{SELECT count(*) = 0 FROM pg_catalog.pg_stat_activity
		WHERE pid = $pid}),
	'that backend exits');
is( sql(q{SELECT string_agg(name || ':' || held, ' ' ORDER BY name)
	FROM dlock_leases WHERE name IN ('read', 'second')}),
	'read:true second:false',
	'the delivered lease stays held, the undelivered one is released');

$node->append_conf('postgresql.conf', "synchronous_standby_names = ''\n");
$node->reload;
is( sql(q{SELECT dlock_acquire('undelivered', '1 hour', '0', 'next') IS NOT NULL}),
	't', 'the next caller gets it at once');
my $log = slurp_file($node->logfile);
like(
	$log,
	qr/released lease "undelivered" because its token could not be sent to the client/,
	'the release is logged');
unlike($log, qr/released lease "(kept|read)"/,
	'no lease whose token was delivered was released');

$node->stop;
done_testing();
