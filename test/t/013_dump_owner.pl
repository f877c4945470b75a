# Copyright (c) 2026, the dlock developers
# pg_dump run by the database owner, who is not a superuser.
#
# dlock marks its lease table and token counter (and any other table listed
# in pg_extension.extconfig) for pg_dump; the extension's own objects belong
# to the superuser who created it.  The database owner must still be able to
# dump the database: 1.1 gives SELECT on every config table to
# pg_database_owner, so the grant follows ALTER DATABASE ... OWNER TO and no
# other role can read the tokens.
#
# The dump is restored, by a superuser (CREATE EXTENSION dlock needs one),
# into a second cluster.  The restored database keeps its leases and tokens,
# and has exactly the objects of the source and of a fresh install
# (test/catalog.sql).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use DlockCatalog;
use DlockTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $src = PostgreSQL::Test::Cluster->new('owner_src');
$src->init;
$src->start;

sub sql
{
	my ($node, $db, $query, @opts) = @_;
	return $node->safe_psql($db, $query, @opts);
}

# A query's SQLSTATE, or '' when it succeeds.
sub sqlstate
{
	my ($node, $db, $query, @opts) = @_;
	return query_sqlstate($node, $db, $query, @opts);
}

my $roles = q{CREATE ROLE app_owner LOGIN;
CREATE ROLE new_owner LOGIN;
CREATE ROLE worker LOGIN;};
sql($src, 'postgres', $roles);
sql($src, 'postgres', 'CREATE DATABASE app OWNER app_owner');
sql($src, 'app', 'CREATE EXTENSION dlock');
is(sql($src, 'postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'app_owner'}),
	'f', 'the database owner is not a superuser');

# Leases of every kind, taken by an ordinary role, and a fenced table.
my @handed;
sub acquire
{
	my ($name, $ttl, $owner) = @_;
	my $o = defined $owner ? "'$owner'" : 'NULL';
	my $t = sql($src, 'app', "SELECT dlock_acquire('$name', '$ttl', '0', $o)",
		extra_params => [ '-U', 'worker' ]);
	push @handed, $t;
	return $t;
}
my %t;
$t{held} = acquire('held', '1 hour');
$t{owned} = acquire('owned', '1 hour', 'pod-1');
$t{released} = acquire('released', '1 hour');
sql($src, 'app', "SELECT dlock_release('released', $t{released})",
	extra_params => [ '-U', 'worker' ]);
sql(
	$src, 'app', qq{CREATE TABLE payout (order_id int PRIMARY KEY, token bigint);
CREATE TRIGGER payout_fence BEFORE INSERT OR UPDATE ON payout
	FOR EACH ROW EXECUTE FUNCTION dlock_fence('held', 'token');
GRANT INSERT, SELECT ON payout TO worker;
GRANT SELECT ON payout TO new_owner;},
	extra_params => [ '-U', 'app_owner' ]);
is(sqlstate($src, 'app', "INSERT INTO payout VALUES (1, $t{held})", extra_params => [ '-U', 'worker' ]),
	'', 'the holder writes through the fence');
push @handed, sql($src, 'app', q{BEGIN; SELECT dlock_acquire('rolled-back', '1 hour'); ROLLBACK;});
my $max = (sort { $a <=> $b } @handed)[-1];

# Only the database owner may read the tables dlock dumps.
my @config = split /\n/, sql($src, 'app',
	q{SELECT c.oid::regclass FROM pg_extension e, unnest(e.extconfig) AS c(oid)
	   WHERE e.extname = 'dlock' ORDER BY 1::text});
ok(scalar(@config) >= 2, 'dlock marks its tables for dumping: ' . join(', ', @config));
for my $rel (@config)
{
	is(sqlstate($src, 'app', "SELECT * FROM $rel LIMIT 1", extra_params => [ '-U', 'app_owner' ]),
		'', "the database owner reads $rel");
	is(sqlstate($src, 'app', "SELECT * FROM $rel LIMIT 1", extra_params => [ '-U', 'worker' ]),
		'42501', "another role cannot read $rel");
	is(sqlstate($src, 'app', "DELETE FROM $rel", extra_params => [ '-U', 'app_owner' ]),
		'42501', "the database owner cannot change $rel");
}

my $tmp = PostgreSQL::Test::Utils::tempdir();
$src->command_ok(
	[ 'pg_dump', '-Fc', '-U', 'app_owner', '-f', "$tmp/app.dump", '-d', $src->connstr('app') ],
	'pg_dump by the database owner, custom format');
$src->command_ok(
	[ 'pg_dump', '-U', 'app_owner', '-f', "$tmp/app.sql", '-d', $src->connstr('app') ],
	'pg_dump by the database owner, plain format');

my $leases_query = q{SET timezone = 'UTC';
SELECT name, owner, token, acquired_at, expires_at, released_at, held, role
  FROM dlock_leases ORDER BY name COLLATE "C"};
my $leases_before = sql($src, 'app', $leases_query);

# The grant follows the ownership of the database.
sql($src, 'postgres', 'ALTER DATABASE app OWNER TO new_owner');
$src->command_ok(
	[ 'pg_dump', '-U', 'new_owner', '-f', "$tmp/new_owner.sql", '-d', $src->connstr('app') ],
	'after ALTER DATABASE ... OWNER TO, the new owner dumps it');
command_fails_like(
	[ 'pg_dump', '-U', 'app_owner', '-f', "$tmp/old_owner.sql", '-d', $src->connstr('app') ],
	qr/permission denied for (table|sequence) dlock_|lack SELECT privilege on the sequence/,
	'and the former owner no longer can read dlock\'s tables');
sql($src, 'postgres', 'ALTER DATABASE app OWNER TO app_owner');

# Another cluster: the same roles, a database owned by the same owner.
my $dst = PostgreSQL::Test::Cluster->new('owner_dst');
$dst->init;
$dst->start;
sql($dst, 'postgres', $roles);
sql($dst, 'postgres', 'CREATE DATABASE from_custom OWNER app_owner');
sql($dst, 'postgres', 'CREATE DATABASE from_plain OWNER app_owner');
sql($dst, 'postgres', 'CREATE DATABASE fresh OWNER app_owner');
sql($dst, 'fresh', 'CREATE EXTENSION dlock');

$dst->command_ok(
	[ 'pg_restore', '--exit-on-error', '-d', $dst->connstr('from_custom'), "$tmp/app.dump" ],
	'the custom dump is restored by a superuser');
$dst->command_ok(
	[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $dst->connstr('from_plain'), '-f', "$tmp/app.sql" ],
	'the plain dump is restored by a superuser');

for my $db ('from_custom', 'from_plain')
{
	is(sql($dst, $db, $leases_query), $leases_before, "$db: the leases are restored as they were");
	my $new = sql($dst, $db, q{SELECT dlock_acquire('new', '1 hour')});
	cmp_ok($new, '>', $max, "$db: the first new token is above every token the source handed out");
	is(sql($dst, $db, q{SELECT dlock_acquire('held', '1 hour')}), '', "$db: the held lease is still held");
	is(sql($dst, $db, "SELECT dlock_check('held', $t{held})", extra_params => [ '-U', 'worker' ]),
		't', "$db: its holder's token is vouched for");
	is(sql($dst, $db, q{SELECT dlock_acquire('owned', '1 hour', '0', 'pod-1')}, extra_params => [ '-U', 'worker' ]),
		$t{owned}, "$db: the owner renews and keeps its token");
	is(sqlstate($dst, $db, "INSERT INTO payout VALUES (2, $t{held})", extra_params => [ '-U', 'worker' ]),
		'', "$db: the holder writes through the fence");
	is(sqlstate($dst, $db, "INSERT INTO payout VALUES (3, $t{released})", extra_params => [ '-U', 'worker' ]),
		'LK001', "$db: the fence rejects a stale token");
	catalogs_match($dst, 'fresh', $dst, $db, "$db: the same objects as a fresh install");
	catalogs_match($src, 'app', $dst, $db, "$db: the same objects as the source");
	$dst->command_ok(
		[ 'pg_dump', '-U', 'app_owner', '-f', "$tmp/$db.again.sql", '-d', $dst->connstr($db) ],
		"$db: its owner dumps it again");
}

$dst->stop;
$src->stop;
done_testing();
