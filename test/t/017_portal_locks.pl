# Copyright (c) 2026, the dlock developers

# psql's ON_ERROR_ROLLBACK (issue 24, items 1 and 3): psql runs each
# statement of a transaction block in a savepoint of its own and rolls an
# error back to it.  A cursor whose first fetch checked a token (or
# acquired a lease) and whose next fetch fails that way keeps the locks the
# first fetch took: another session cannot take the expired lease over, and
# a waiting takeover gets it only after the holder's write has committed,
# so no stale write commits after the next holder got its token.  Asserted
# by state (pg_locks, the lease, the waiter's wait), never by timings.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use DlockTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('portal_locks');
$node->init;
$node->start;

sub sql
{
	my ($query) = @_;
	return $node->safe_psql('postgres', $query);
}

# Does pid hold a lock on a lock name in mode (pg_locks)?
sub name_lock_held
{
	my ($pid, $mode) = @_;
	return sql(qq{SELECT count(*) > 0 FROM pg_catalog.pg_locks
		WHERE pid = $pid AND locktype = 'advisory' AND objsubid = 17484
		  AND mode = '$mode' AND granted});
}

sql('CREATE EXTENSION dlock');
sql(q{CREATE TABLE ledger (id int PRIMARY KEY, token bigint, what text)});
sql(q{CREATE TRIGGER ledger_fence BEFORE INSERT OR UPDATE OR DELETE ON ledger
	FOR EACH ROW EXECUTE FUNCTION dlock_fence('job', 'token')});

# 1. The check: the first fetch checks the token, the second fails and
# psql rolls it back; the holder writes, and its lease expires meanwhile.
my $token = sql(q{SELECT dlock_acquire('job', '1 min')});
my $holder = $node->background_psql('postgres', on_error_stop => 0);
my $holder_pid = $holder->query_safe(q{\set ON_ERROR_ROLLBACK on
SELECT pg_backend_pid()});

# The holder's next fetch from c, which fails: its error.  The error may
# reach psql's stderr only with the next query's output, and stays there
# until cleared.
sub failing_fetch
{
	$holder->query('FETCH 1 FROM c');
	$holder->query('SELECT 1');
	my $errors = $holder->{stderr};
	$holder->{stderr} = '';
	return $errors;
}
$holder->query_safe(qq{BEGIN;
DECLARE c CURSOR FOR
SELECT dlock_check('job', $token) AS ok, 1 / (2 - x) AS q FROM generate_series(1, 3) AS x;});
is($holder->query_safe('FETCH 1 FROM c'), 't|1', 'the first fetch checks the token');
like(failing_fetch(), qr/division by zero/, 'the second fetch fails');
is($holder->query_safe('SELECT 1'), '1',
	'ON_ERROR_ROLLBACK keeps the transaction going');
is(name_lock_held($holder_pid, 'RowShareLock'), 't',
	'the check lock is still held');
$holder->query_safe(qq{INSERT INTO ledger VALUES (1, $token, 'holder')});
is(sql(qq{SELECT dlock_renew('job', $token, '300 ms')}), 't',
	'the holder role renews the lease for a short time');
ok($node->poll_query_until('postgres',
		q{SELECT NOT held FROM dlock_leases WHERE name = 'job'}),
	'the lease expires');
is(sql(q{SELECT dlock_acquire('job', '1 min') IS NULL}), 't',
	'no takeover while the checking transaction is open');

# A waiting takeover waits for the checking transaction in the lock manager
# and gets the lease only after the holder's write has committed.
my $next = $node->background_psql('postgres', on_error_stop => 0);
my $next_pid = $next->query_safe('SELECT pg_backend_pid()');
$next->query_until(qr/started/, q{\echo started
SELECT dlock_acquire('job', '1 min', '5 min') AS next_token \gset
});
ok( $node->poll_query_until('postgres',
		qq{SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $next_pid}),
	'the takeover waits for the checking transaction');
is(sql('SELECT count(*) FROM ledger'), '0', 'the write is not committed yet');
$holder->query_safe('COMMIT');
my $next_token = $next->query_safe(q{SELECT :next_token});
ok($next_token > $token, 'the takeover gets a newer token after the commit');
is(sql(qq{SELECT string_agg(id || ':' || (token = $token), ',') FROM ledger}),
	'1:true', "the holder's write committed with its token");
$next->quit;

# 2. An acquire in a cursor: its state and hand-over locks stay, and
# another acquire of the name is NULL at once (it does not wait on the row).
$holder->query_safe(q{BEGIN;
DECLARE c CURSOR FOR
SELECT dlock_acquire('free', '1 min') IS NOT NULL AS got, 1 / (2 - x) AS q
  FROM generate_series(1, 2) AS x;});
is($holder->query_safe('FETCH 1 FROM c'), 't|1', 'the first fetch acquires');
like(failing_fetch(), qr/division by zero/, 'the second fetch fails');
is(name_lock_held($holder_pid, 'ShareUpdateExclusiveLock') . ','
	  . name_lock_held($holder_pid, 'ExclusiveLock'),
	't,t', 'the state and hand-over locks are still held');
is( sql(q{SET statement_timeout = '30 s';
SELECT dlock_acquire('free', '1 min') IS NULL}),
	't', 'another acquire of the name is NULL at once');
$holder->query_safe('COMMIT');
is(sql(q{SELECT held FROM dlock_leases WHERE name = 'free'}), 't',
	'the acquire committed');
$holder->quit;
is(sql(q{SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid IN (17484, 17485)}),
	'0', 'no dlock lock is left');

$node->stop;
done_testing();
