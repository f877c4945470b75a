# Copyright (c) 2026, the dlock developers

# pg_dump of a database using dlock, restored into a new database of the
# same cluster (custom format, pg_restore) and into a database of a second,
# fresh cluster (plain format, psql).
#
# The source holds every kind of lease (held anonymous, held with an owner,
# released, expired, a name with quotes, a tab and multibyte text), a table
# fenced by dlock_fence, and a token drawn by an acquire that was rolled
# back, so that the highest token handed out lives only in the counter.
#
# In each restored database: the leases are the same rows; the held ones are
# still held (others cannot take them, the owner renews and keeps its token,
# checks vouch for them, release works); the fence lets the holder write and
# rejects a stale token; and the first new token is greater than every token
# the source handed out before the dump.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../lib";
use DlockTest;

my $src = PostgreSQL::Test::Cluster->new('dump_src');
$src->init;
$src->start;

sub sql
{
	my ($node, $db, $query) = @_;
	return $node->safe_psql($db, $query);
}

# A query's SQLSTATE, or '' when it succeeds.
sub sqlstate
{
	my ($node, $db, $query) = @_;
	return query_sqlstate($node, $db, $query);
}

sub max_of
{
	my $max = shift;
	for (@_) { $max = $_ if $_ > $max; }
	return $max;
}

$src->safe_psql('postgres', 'CREATE DATABASE app');

# dlock lives in its own schema: the dump must carry that over too.
# DLOCK_EDITION's dlock (test/run's edition switch).
install_dlock($src, 'app', 'locks');

my @handed;    # every token the source handed out

sub acquire
{
	my ($name, $ttl, $owner) = @_;
	my $owner_sql = defined $owner ? "'$owner'" : 'NULL';
	my $t = sql($src, 'app',
		"SELECT locks.dlock_acquire($name, '$ttl', '0', $owner_sql)");
	push @handed, $t;
	return $t;
}

# Release churn moves the counter on.
for (1 .. 5)
{
	my $t = acquire(q{'churn'}, '1 hour');
	is(sql($src, 'app', "SELECT locks.dlock_release('churn', $t)"),
		't', 'source: churn release');
}

my %t;
$t{anon} = acquire(q{'held/anon'}, '1 hour');
$t{owned} = acquire(q{'held/owned'}, '1 hour', 'pod-1');
$t{odd} = acquire(q{E'it''s "odd"\tnäme/ü'}, '1 hour');
$t{released} = acquire(q{'released'}, '1 hour');
is(sql($src, 'app', "SELECT locks.dlock_release('released', $t{released})"),
	't', 'source: released lease released');
$t{expired} = acquire(q{'expired'}, '10 ms');
sql($src, 'app', 'SELECT pg_sleep(0.05)');

# A fenced table with a row written by the holder of "payouts".
$t{payouts} = acquire(q{'payouts'}, '1 hour');
sql(
	$src, 'app', qq{CREATE TABLE payout (order_id int, token bigint);
CREATE TRIGGER payout_fence BEFORE INSERT OR UPDATE ON payout
	FOR EACH ROW EXECUTE FUNCTION locks.dlock_fence('payouts', 'token');
INSERT INTO payout VALUES (1, $t{payouts});});

# Holder roles (1.1): a lease of a role that the destination will have (under
# another OID), and one of a role it will not have.
sql($src, 'app', q{CREATE ROLE dlock_dump_holder; CREATE ROLE dlock_dump_gone;
GRANT USAGE ON SCHEMA locks TO PUBLIC});
$t{role} = sql($src, 'app',
	q{SET ROLE dlock_dump_holder; SELECT locks.dlock_acquire('role/holder', '1 hour')});
$t{gone} = sql($src, 'app',
	q{SET ROLE dlock_dump_gone; SELECT locks.dlock_acquire('role/gone', '1 hour')});
push @handed, $t{role}, $t{gone};

# The highest token handed out: its acquire rolled back, so it is in no
# lease row, only in the counter.
my $rolled_back = sql(
	$src, 'app', q{BEGIN;
SELECT locks.dlock_acquire('rolled-back', '1 hour');
ROLLBACK;});
push @handed, $rolled_back;
my $max_handed = max_of(@handed);
is($max_handed, $rolled_back,
	'source: the highest token handed out is the rolled-back one');
is(sql($src, 'app', 'SELECT max(token) < ' . $rolled_back . ' FROM locks.dlock_leases'),
	't', 'source: no lease row carries it');

my $leases_query = q{SET timezone = 'UTC';
SELECT name, owner, token, acquired_at, expires_at, released_at, held, role
  FROM locks.dlock_leases WHERE name NOT LIKE 'role/%' ORDER BY name COLLATE "C"};
my $leases_before = sql($src, 'app', $leases_query);
is( sql($src, 'app',
		q{SELECT string_agg(name || '=' || held, ',' ORDER BY name COLLATE "C") FROM locks.dlock_leases WHERE name NOT LIKE 'role/%'}),
	"churn=false,expired=false,held/anon=true,held/owned=true,it's \"odd\"\tnäme/ü=true,payouts=true,released=false",
	'source: the leases before the dump');

my $tmp = PostgreSQL::Test::Utils::tempdir();
$src->command_ok(
	[ 'pg_dump', '-Fc', '-f', "$tmp/app.dump", '-d', $src->connstr('app') ],
	'pg_dump, custom format');
$src->command_ok(
	[ 'pg_dump', '-f', "$tmp/app.sql", '-d', $src->connstr('app') ],
	'pg_dump, plain format');

# The checks on a restored database.
sub check_restored
{
	my ($node, $db, $label) = @_;

	is(sql($node, $db, $leases_query),
		$leases_before, "$label: the lease rows are restored as they were");

	# First, before anything else draws a token.
	my $new = sql($node, $db, q{SELECT locks.dlock_acquire('new', '1 hour')});
	cmp_ok($new, '>', $max_handed,
		"$label: the first new token beats every token the source handed out");

	# Held leases stay held.
	is(sql($node, $db, q{SELECT locks.dlock_acquire('held/anon', '1 hour')}),
		'', "$label: held/anon cannot be taken");
	is( sql($node, $db,
			q{SELECT locks.dlock_acquire('held/owned', '1 hour', '0', 'pod-2')}),
		'',
		"$label: held/owned cannot be taken by another owner");
	is( sql($node, $db,
			q{SELECT locks.dlock_acquire('held/owned', '1 hour', '0', 'pod-1')}),
		$t{owned},
		"$label: the owner renews held/owned and keeps its token");
	is( sql($node, $db,
			qq{SELECT locks.dlock_acquire(E'it''s "odd"\\tnäme/ü', '1 hour')}),
		'',
		"$label: the lease with the odd name cannot be taken");
	is( sql($node, $db,
			qq{SELECT locks.dlock_check(E'it''s "odd"\\tnäme/ü', $t{odd})}),
		't',
		"$label: the lease with the odd name is vouched for");
	is(sql($node, $db, "SELECT locks.dlock_check('held/anon', $t{anon})"),
		't', "$label: dlock_check vouches for held/anon");
	is(sqlstate($node, $db, "SELECT locks.dlock_assert('held/anon', $t{anon})"),
		'', "$label: dlock_assert passes for held/anon");
	is(sql($node, $db, "SELECT locks.dlock_release('held/anon', $t{anon})"),
		't', "$label: held/anon released with its token");

	# The fence: the restored row is there, the holder writes, a stale
	# token is rejected.
	is(sql($node, $db, 'SELECT order_id, token FROM payout'),
		"1|$t{payouts}", "$label: the fenced row is restored");
	is(sqlstate($node, $db, "INSERT INTO payout VALUES (2, $t{payouts})"),
		'', "$label: the holder of payouts writes through the fence");
	is(sqlstate($node, $db, "INSERT INTO payout VALUES (3, $t{released})"),
		'LK001', "$label: a stale token is rejected by the fence");

	# Holder roles: the role of the recorded name holds its lease (by OID in
	# the same cluster, by name in another); a missing role's lease is left
	# to superusers.
	is( sql($node, $db,
			"SET ROLE dlock_dump_holder; SELECT locks.dlock_renew('role/holder', $t{role}, '1 hour')"),
		't', "$label: the holder role renews its restored lease");
	is( sql($node, $db,
			"SET ROLE dlock_dump_holder; SELECT token FROM locks.dlock_leases WHERE name = 'role/holder'"),
		$t{role}, "$label: the holder role sees its token");
	is(sql($node, $db, "SELECT locks.dlock_release('role/gone', $t{gone})"),
		't', "$label: a superuser releases the lease of a role that is not there");

	# Free leases are free, with newer tokens.
	my $t_exp = sql($node, $db, q{SELECT locks.dlock_acquire('expired', '1 hour')});
	cmp_ok($t_exp, '>', $new, "$label: the expired lease is taken with a newer token");
	my $t_rel = sql($node, $db, q{SELECT locks.dlock_acquire('released', '1 hour')});
	cmp_ok($t_rel, '>', $t_exp, "$label: the released lease is taken with a newer token");
	my $t_rb = sql($node, $db, q{SELECT locks.dlock_acquire('rolled-back', '1 hour')});
	cmp_ok($t_rb, '>', $t_rel, "$label: a name never committed is taken with a newer token");
}

# 1. A new database of the same cluster, from the custom-format dump.
$src->safe_psql('postgres', 'CREATE DATABASE app_copy');
$src->command_ok(
	[ 'pg_restore', '--exit-on-error', '-d', $src->connstr('app_copy'), "$tmp/app.dump" ],
	'pg_restore into a new database');
check_restored($src, 'app_copy', 'same cluster');

# 2. A fresh cluster, from the plain dump.
my $dst = PostgreSQL::Test::Cluster->new('dump_dst');
$dst->init;
$dst->start;
# Other roles first, so that the holder role gets another OID than in the
# source; the source's second holder role is not created at all.
$dst->safe_psql('postgres',
	'CREATE ROLE dlock_dump_pad1; CREATE ROLE dlock_dump_pad2; CREATE ROLE dlock_dump_holder');
isnt( $dst->safe_psql('postgres', q{SELECT oid FROM pg_roles WHERE rolname = 'dlock_dump_holder'}),
	$src->safe_psql('postgres', q{SELECT oid FROM pg_roles WHERE rolname = 'dlock_dump_holder'}),
	'fresh cluster: the holder role has another OID there');
$dst->safe_psql('postgres', 'CREATE DATABASE app');
$dst->command_ok(
	[
		'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $dst->connstr('app'),
		'-f', "$tmp/app.sql"
	],
	'plain dump restored with psql into a fresh cluster');
check_restored($dst, 'app', 'fresh cluster');

# The source itself went on untouched by the dumps.
cmp_ok(sql($src, 'app', q{SELECT locks.dlock_acquire('after-dump', '1 hour')}),
	'>', $max_handed, 'source: the next token beats every earlier one');

$dst->stop;
$src->stop;

done_testing();
