# Copyright (c) 2026, the dlock developers

# Moving between the editions (issue 26 item 5, docs/moving.md): the lease
# state of a C-edition database goes by dlock_export() into a database with
# the SQL edition (dlock_import()), and from there back into a database with
# the C edition.  The databases are in one cluster (a database has at most
# one dlock), so the holder roles are the same roles.
#
# The first database holds every kind of lease: held anonymously, held with
# an owner label, held with a name with quotes, a tab and multibyte text,
# held by a second role, released, expired; and its highest token was drawn
# by acquires that rolled back, so that it lives only in the counter, above
# the clock.
# After each move: the lease rows are the ones exported, also by the view;
# the holders renew, check and release with their tokens, an owner's
# acquire keeps its token, another role cannot take a held lease; the next
# token of any name is above every token handed out before the export.
# And every refusal of dlock_import (an export that is not one, a database
# that has leases, a holder role that is missing, a caller without the
# privilege) gives its SQLSTATE and changes nothing.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../lib";
use DlockTest;

my $node = PostgreSQL::Test::Cluster->new('edition_move');
$node->init(allows_streaming => 1);
$node->start;

sub sql
{
	my ($db, $query) = @_;
	return $node->safe_psql($db, $query);
}

sub sqlstate
{
	my ($db, $query) = @_;
	return query_sqlstate($node, $db, $query);
}

sub as_role
{
	my ($db, $role, $query) = @_;
	return sql($db, "SET ROLE $role; $query");
}

# The SQL edition's database is set up as on a managed service: owned by
# an admin role that is no superuser, which creates the trusted extension
# and runs the export and import there, pg_control_system() revoked.
$node->safe_psql(
	'postgres', q{CREATE ROLE move_app; CREATE ROLE move_other; CREATE ROLE move_admin LOGIN;
CREATE DATABASE move_c1; CREATE DATABASE move_sql OWNER move_admin; CREATE DATABASE move_c2;
CREATE DATABASE move_refuse});
sql('move_c1', 'CREATE EXTENSION dlock');
sql('move_sql', 'REVOKE EXECUTE ON FUNCTION pg_control_system() FROM PUBLIC');
sql('move_sql', 'SET ROLE move_admin; CREATE EXTENSION dlock_sql');
sql('move_c2', 'CREATE EXTENSION dlock');
is(sql('move_c1', 'SELECT dlock_export() ->> \'edition\''), 'c', 'the C edition exports as "c"');
is(sql('move_sql', 'SELECT dlock_export() ->> \'edition\''), 'sql', 'the SQL edition exports as "sql"');

# The export's checks are one text in both editions.
is(sql('move_sql', q{SELECT md5(prosrc) FROM pg_proc WHERE proname = 'dlock_import_leases'}),
	sql('move_c1', q{SELECT md5(prosrc) FROM pg_proc WHERE proname = 'dlock_import_leases'}),
	'dlock_import_leases is the same in both editions');

my $odd = q{E'it''s "odd"\tnäme/ü'};
my $leases_query = q{SET timezone = 'UTC';
SELECT name, owner, token, acquired_at, expires_at, released_at, held, role
  FROM dlock_leases ORDER BY name COLLATE "C"};

# Fill a database with every kind of lease; returns the tokens by name and
# the highest token handed out (a rolled-back acquire's).  The counter is
# first raised $ahead microseconds above the clock, as dlock_rebase(at_least)
# does after a move from a server whose clock was ahead: the first draw in
# the importing database, which jumps to its clock and above its lease
# rows, would then not be above it without the import's own rebase.
sub fill
{
	my ($db, $prefix, $ahead) = @_;
	my %t;
	is( sql($db,
			"SELECT dlock_rebase((extract(epoch FROM clock_timestamp()) * 1e6)::bigint + $ahead) > 0"),
		't', "$db: the counter is ahead of the clock");
	$t{anon} = as_role($db, 'move_app', "SELECT dlock_acquire('${prefix}held/anon', '1 hour')");
	$t{owned} = as_role($db, 'move_app',
		"SELECT dlock_acquire('${prefix}held/owned', '1 hour', '0', 'pod-1')");
	$t{odd} = as_role($db, 'move_app', "SELECT dlock_acquire($odd || '$prefix', '1 hour')");
	$t{other} = as_role($db, 'move_other', "SELECT dlock_acquire('${prefix}held/other', '1 hour')");
	$t{released} = as_role($db, 'move_app', "SELECT dlock_acquire('${prefix}released', '1 hour')");
	is(as_role($db, 'move_app', "SELECT dlock_release('${prefix}released', $t{released})"),
		't', "$db: released lease released");
	$t{expired} = as_role($db, 'move_app', "SELECT dlock_acquire('${prefix}expired', '10 ms')");
	sql($db, 'SELECT pg_sleep(0.05)');
	# Five tokens of acquires that rolled back: the highest is five above
	# the highest lease row, further than a jump adds on its own.
	my $rolled = as_role($db, 'move_app',
		"BEGIN; SELECT max(dlock_acquire('${prefix}rolled-back' || i, '1 hour')) FROM generate_series(1, 5) AS i; ROLLBACK");
	my $max = 0;
	for (values %t) { $max = $_ if $_ > $max; }
	cmp_ok($rolled, '>', $max, "$db: the highest token is in no lease row");
	return (\%t, $rolled);
}

# The checks on a database after an import of the leases %$t (names with
# $prefix), whose source handed out no token above $highest.
sub check_moved
{
	my ($db, $prefix, $t, $highest, $rows) = @_;

	is(sql($db, $leases_query), $rows, "$db: the lease rows are the exported ones")
	  if defined $rows;
	my $new = as_role($db, 'move_other', "SELECT dlock_acquire('${prefix}new/$db', '1 hour')");
	cmp_ok($new, '>', $highest, "$db: the first new token is above every token the source handed out");
	is(as_role($db, 'move_other', "SELECT dlock_acquire('${prefix}held/anon', '1 hour')"),
		'', "$db: another role cannot take a held lease");
	is(as_role($db, 'move_app', "SELECT dlock_acquire('${prefix}held/owned', '1 hour', '0', 'pod-2')"),
		'', "$db: another owner cannot take a held lease");
	is(as_role($db, 'move_app', "SELECT dlock_acquire('${prefix}held/owned', '1 hour', '0', 'pod-1')"),
		$t->{owned}, "$db: the owner renews its lease and keeps its token");
	is(as_role($db, 'move_app', "SELECT dlock_check($odd || '$prefix', $t->{odd})"),
		't', "$db: the holder's check vouches for the odd name");
	is(sqlstate($db, "SET ROLE move_other; SELECT dlock_check($odd || '$prefix', $t->{odd})"),
		'42501', "$db: another role's check is refused");
	is(as_role($db, 'move_app', "SELECT dlock_renew('${prefix}held/anon', $t->{anon}, '1 hour')"),
		't', "$db: the holder renews with its token");
	is(as_role($db, 'move_other', "SELECT dlock_renew('${prefix}held/other', $t->{other}, '1 hour')"),
		't', "$db: the second role renews its lease");
	is(as_role($db, 'move_app', "SELECT dlock_release('${prefix}held/anon', $t->{anon})"),
		't', "$db: the holder releases with its token");
	my $again = as_role($db, 'move_app', "SELECT dlock_acquire('${prefix}held/anon', '1 hour')");
	cmp_ok($again, '>', $new, "$db: the released name is taken with a newer token");
	$t->{anon} = $again;
	for my $name ('released', 'expired', 'rolled-back5')
	{
		my $tok = as_role($db, 'move_app', "SELECT dlock_acquire('${prefix}$name', '1 hour')");
		cmp_ok($tok, '>', $again, "$db: $name is free and taken with a newer token");
		is(as_role($db, 'move_app', "SELECT dlock_release('${prefix}$name', $tok)"), 't',
			"$db: and released");
	}
}

# Move the state of $from into $to; returns the export.
sub move
{
	my ($from, $to) = @_;
	my %as = (move_sql => 'SET ROLE move_admin; ');
	my $state = sql($from, ($as{$from} // '') . 'SELECT dlock_export()') =~ s/'/''/gr;
	my $rows = sql($from, $leases_query);
	is(sql($to, ($as{$to} // '') . "SELECT dlock_import('$state')"),
		sql($from, 'SELECT count(*) FROM dlock_leases'), "$from -> $to: every lease imported");
	return ($state, $rows);
}

# C -> SQL
my ($t, $highest) = fill('move_c1', 'c/', 10**12);
my ($state, $rows) = move('move_c1', 'move_sql');
cmp_ok(sql('move_sql', "SELECT ('$state'::jsonb ->> 'highest_token')::bigint >= $highest"),
	'eq', 't', 'the export carries the rolled-back token as the highest');
is( sql('move_sql',
		q{SELECT count(*) FROM dlock_leases AS l WHERE NOT EXISTS (SELECT FROM dlock_sql_queue AS q WHERE q.name = l.name)}),
	'0', 'move_sql: every imported lease has its queue row, as a new lease does');
check_moved('move_sql', 'c/', $t, $highest, $rows);

# ... and the SQL edition's own leases, then SQL -> C
my ($t2, $highest2) = fill('move_sql', 's/', 2 * 10**12);
my $rows_sql = sql('move_sql', $leases_query);
($state, $rows) = move('move_sql', 'move_c2');
is($rows, $rows_sql, 'the rows did not change by the export');
check_moved('move_c2', 'c/', $t, $highest2, $rows);
check_moved('move_c2', 's/', $t2, $highest2, undef);

# Refusals, in both editions: nothing changes.
for my $db ('move_sql', 'move_c2')
{
	my $before = sql($db, $leases_query);
	my $export = sql($db, 'SELECT dlock_export()') =~ s/'/''/gr;
	is(sqlstate($db, "SELECT dlock_import('$export')"), '55000',
		"$db: an import into a database with leases is refused");
	is(sqlstate($db, "SELECT dlock_import('$export', replace => true)"), '55000',
		"$db: also with replace => true while leases are held");
	is(sqlstate($db, 'SELECT dlock_import(NULL)'), '22004', "$db: a NULL export is refused");
	is(sqlstate($db, q{SELECT dlock_import('{}', NULL)}), '22004', "$db: a NULL replace is refused");
	is(sqlstate($db, q{SELECT dlock_import('[]')}), '22023', "$db: an array is not an export");
	is(sqlstate($db, q{SELECT dlock_import('{"format": "dlock-export", "version": 2}')}),
		'22023', "$db: an export of another version is refused");
	for my $bad (
		q{{"name": "", "token": 1}},
		q{{"name": "x", "token": 0, "acquired_at": "2026-01-01", "expires_at": "2026-01-01"}},
		q{{"name": "x", "token": 6, "acquired_at": "2026-01-01", "expires_at": "2026-01-01"}},
		q{{"name": "x", "token": 1.5, "acquired_at": "2026-01-01", "expires_at": "2026-01-01"}},
		q{{"name": "x", "token": 1, "acquired_at": "soon", "expires_at": "2026-01-01"}},
		q{{"name": "x", "token": 1, "acquired_at": "2026-01-01", "expires_at": "infinity"}},
		q{{"name": "x", "token": 1, "acquired_at": "2026-01-01", "expires_at": "2026-01-01", "owner": 7}})
	{
		is( sqlstate($db,
				qq{SELECT dlock_import('{"format": "dlock-export", "version": 1, "highest_token": 5, "counter": 5, "leases": [$bad]}', true)}),
			'22023', "$db: a bad lease is refused: $bad");
	}
	is(sqlstate($db, 'SET ROLE move_app; SELECT dlock_export()'), '42501',
		"$db: a role without the grant cannot export");
	is(sqlstate($db, "SET ROLE move_app; SELECT dlock_import('$export')"), '42501',
		"$db: a role without the grant cannot import");
	is(sqlstate($db, 'BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT dlock_export()'), '25000',
		"$db: an export in a REPEATABLE READ transaction is refused");
	is(sql($db, $leases_query), $before, "$db: the refusals changed nothing");
}

# The export's lock: an acquire waits while the exporting transaction is
# open, and then gets a token above the exported highest one.
for my $db ('move_sql', 'move_c2')
{
	my $exp = $node->background_psql($db);
	$exp->query_safe('BEGIN');
	my $highest_now = $exp->query_safe(q{SELECT dlock_export() ->> 'highest_token'});
	my $acq = $node->background_psql($db, on_error_stop => 0);
	my $pid = $acq->query_safe('SELECT pg_backend_pid()');
	$acq->query_until(qr/started/,
		"\\echo started\nSELECT dlock_acquire('after-export', '1 min', '1 min');\n");
	ok( $node->poll_query_until(
			$db, "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $pid"),
		"$db: an acquire waits while the export's transaction is open");
	is(sql($db, q{SELECT count(*) FROM dlock_leases WHERE name = 'after-export'}), '0',
		"$db: and has not taken the lease");
	$exp->query_safe('COMMIT');
	ok($node->poll_query_until($db, q{SELECT held FROM dlock_leases WHERE name = 'after-export'}),
		"$db: it takes the lease once the export's transaction ends");
	cmp_ok(sql($db, q{SELECT token FROM dlock_leases WHERE name = 'after-export'}), '>', $highest_now,
		"$db: with a token above the exported highest one");
	$acq->quit;
	$exp->quit;
}

# An empty database, and replace => true over leases that are not held; a
# held lease of a role that does not exist here is refused.
sql('move_refuse', 'CREATE EXTENSION dlock_sql');
# (highest_token above anything this database hands out: an export older
# than its leases is refused)
my $gone = q{{"format": "dlock-export", "version": 1, "highest_token": 4000000000000000000, "counter": 4000000000000000000, "leases": [{"name": "x", "token": 5, "role": "move_nobody", "owner": null, "acquired_at": "2026-01-01", "expires_at": "2999-01-01", "released_at": null}]}};
is(sqlstate('move_refuse', "SELECT dlock_import('$gone')"), '42704',
	'a held lease of a missing role is refused');
is(sql('move_refuse', 'SELECT count(*) FROM dlock_leases'), '0', 'and nothing was imported');
my $tok = sql('move_refuse', q{SELECT dlock_acquire('local', '10 ms')});
sql('move_refuse', 'SELECT pg_sleep(0.05)');
$gone =~ s/"2999-01-01"/"2000-01-01"/;
is(sql('move_refuse', "SELECT dlock_import('$gone', replace => true)"), '1',
	'replace => true replaces leases that are not held; an expired lease of a missing role is history');
is(sql('move_refuse', q{SELECT string_agg(name || ':' || coalesce(role::text, '-'), ',') FROM dlock_leases}),
	'x:-', 'the replaced rows are gone, the imported one has no holder');
cmp_ok(sql('move_refuse', q{SELECT dlock_acquire('local', '1 min')}), '>', $tok,
	'tokens go on above the replaced ones');

# A hot standby exports what it has replayed, without a lock; it cannot
# import (25006).
$node->backup('move_backup');
my $standby = PostgreSQL::Test::Cluster->new('edition_move_standby');
$standby->init_from_backup($node, 'move_backup', has_streaming => 1);
$standby->start;
$node->wait_for_catchup($standby);
for my $db ('move_sql', 'move_c2')
{
	my $q = q{SELECT dlock_export() - 'exported_at'};
	is($standby->safe_psql($db, $q), sql($db, $q), "$db: a hot standby exports what the primary does");
	is(query_sqlstate($standby, $db, q{SELECT dlock_import(dlock_export(), true)}), '25006',
		"$db: a hot standby does not import");
}
$standby->stop;

$node->stop;
done_testing();
