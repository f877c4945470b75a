# Copyright (c) 2026, the dlock developers
# ALTER EXTENSION dlock UPDATE from 1.0 to the default version, with leases held.
#
# Version 1.0 is created with the 1.1 library (installing the 1.1 package
# replaces dlock.so under databases whose objects are still 1.0), used for
# every call of its API, and updated while a lease is held and a table is
# fenced with it.  After the update: the version is 1.1, the lease is still
# held and checkable with its token, the holder's fenced write passes, a
# stale one is rejected, the old token releases the lease and new tokens are
# above every token handed out before.  A session that used the 1.0 objects
# before the update goes on working after it.
#
# Then the updated database must have exactly the objects of a fresh 1.1
# install (test/catalog.sql, compared by test/lib/DlockCatalog.pm), in the
# default schema and in a schema of its own.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use DlockCatalog;
use DlockTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('upgrade');
$node->init;
$node->start;

sub sql
{
	my ($db, $query) = @_;
	return $node->safe_psql($db, $query);
}

# A query's SQLSTATE, or '' when it succeeds.
sub sqlstate
{
	my ($db, $query) = @_;
	return query_sqlstate($node, $db, $query);
}

my $default = sql('postgres', q{SELECT default_version FROM pg_available_extensions WHERE name = 'dlock'});
is($default, '1.2', 'the default version is 1.2');
is( sql('postgres',
		q{SELECT string_agg(version, ',' ORDER BY version) FROM pg_available_extension_versions WHERE name = 'dlock'}),
	'1.0,1.1,1.2',
	'versions 1.0, 1.1 and 1.2 are installable');
is( sql('postgres',
		q{SELECT string_agg(source || '>' || target || ':' || coalesce(path, 'none'), ' ' ORDER BY source, target)
		    FROM pg_extension_update_paths('dlock')}),
	'1.0>1.1:1.0--1.1 1.0>1.2:1.0--1.1--1.2 1.1>1.0:none 1.1>1.2:1.1--1.2 1.2>1.0:none 1.2>1.1:none',
	'1.0 updates to 1.1 and on to 1.2, one step at a time; there is no way back');

# upgrade_in(schema): one database, 1.0 in the given schema, updated.
sub upgrade_in
{
	my ($db, $schema) = @_;
	my $s = $schema ? "$schema." : '';
	my $in = $schema ? " (schema $schema)" : '';

	sql('postgres', "CREATE DATABASE $db");
	sql($db, "CREATE SCHEMA $schema") if $schema;
	sql($db, "CREATE EXTENSION dlock VERSION '1.0'" . ($schema ? " SCHEMA $schema" : ''));
	is(sql($db, q{SELECT extversion FROM pg_extension WHERE extname = 'dlock'}),
		'1.0', "version 1.0 created with the 1.1 library$in");

	my @handed;
	my $acquire = sub {
		my ($name, $ttl, $owner) = @_;
		my $o = defined $owner ? "'$owner'" : 'NULL';
		my $t = sql($db, "SELECT ${s}dlock_acquire('$name', '$ttl', '0', $o)");
		push @handed, $t if $t ne '';
		return $t;
	};

	# Every call of the 1.0 API, on the 1.1 library.
	my $job = $acquire->('job', '1 hour');
	like($job, qr/^\d+$/, "1.0 objects: acquire gives a token$in");
	is($acquire->('job', '1 hour'), '', "1.0 objects: a held lease is busy$in");
	is(sql($db, "SELECT ${s}dlock_renew('job', $job, '2 hours')"), 't', "1.0 objects: renew$in");
	is(sql($db, "SELECT ${s}dlock_check('job', $job)"), 't', "1.0 objects: check$in");
	is(sqlstate($db, "SELECT ${s}dlock_assert('job', $job)"), '', "1.0 objects: assert passes$in");
	my $leader = $acquire->('leader', '1 hour', 'pod-1');
	is($acquire->('leader', '1 hour', 'pod-1'), $leader,
		"1.0 objects: the owner renews and keeps its token$in");
	my $gone = $acquire->('gone', '1 hour');
	is(sql($db, "SELECT ${s}dlock_release('gone', $gone)"), 't', "1.0 objects: release$in");
	is(sql($db, "SELECT ${s}dlock_release('gone', $gone)"), 'f', "1.0 objects: release twice is false$in");
	is(sqlstate($db, "SELECT ${s}dlock_assert('gone', $gone)"), 'LK001',
		"1.0 objects: assert of a stale token is LK001$in");

	# A table fenced with the lease, the 1.0 way.
	sql(
		$db, qq{CREATE TABLE payout (order_id int PRIMARY KEY, token bigint);
CREATE TRIGGER payout_fence BEFORE INSERT OR UPDATE ON payout
	FOR EACH ROW EXECUTE FUNCTION ${s}dlock_fence('job', 'token')});
	is(sqlstate($db, "INSERT INTO payout VALUES (1, $job)"), '', "1.0 objects: the holder writes through the fence$in");
	is(sqlstate($db, "INSERT INTO payout VALUES (2, $gone)"), 'LK001',
		"1.0 objects: the fence rejects a stale token$in");
	# 1.0's rule until the update: an UPDATE that leaves the token alone is
	# checked against the row's token, so no application breaks when the
	# 1.1 library is installed.
	is(sqlstate($db, "UPDATE payout SET order_id = 5 WHERE order_id = 1"), '',
		"1.0 objects: an UPDATE that leaves the token alone passes on the row's token$in");
	is(sqlstate($db, "UPDATE payout SET order_id = 1 WHERE order_id = 5"), '',
		"1.0 objects: and again$in");

	# A token drawn by an acquire that rolled back: only the counter has it.
	my $rolled_back = sql($db, "BEGIN; SELECT ${s}dlock_acquire('rolled-back', '1 hour'); ROLLBACK;");
	push @handed, $rolled_back;
	my $max = (sort { $a <=> $b } @handed)[-1];

	# A session that used the 1.0 objects (and so loaded the library)
	# stays open across the update.
	my $session = $node->background_psql($db, on_error_stop => 0);
	is($session->query_safe("SELECT ${s}dlock_check('job', $job)"), 't',
		"a session checks before the update$in");

	sql($db, 'ALTER EXTENSION dlock UPDATE');
	is(sql($db, q{SELECT extversion FROM pg_extension WHERE extname = 'dlock'}),
		$default, "updated to $default$in");

	# The lease and the fence went through the update.
	is($acquire->('job', '1 hour'), '', "after the update the lease is still held$in");
	is(sql($db, "SELECT held AND token = $job FROM ${s}dlock_leases WHERE name = 'job'"), 't',
		"after the update the view shows the lease with its token$in");
	is(sql($db, "SELECT ${s}dlock_check('job', $job)"), 't', "after the update check vouches for the token$in");
	is(sqlstate($db, "SELECT ${s}dlock_assert('job', $job)"), '', "after the update assert passes$in");
	is(sqlstate($db, "INSERT INTO payout VALUES (3, $job)"), '',
		"after the update the holder's fenced write passes$in");
	is(sqlstate($db, "INSERT INTO payout VALUES (4, $gone)"), 'LK001',
		"after the update the fence rejects a stale token$in");
	is(sqlstate($db, "UPDATE payout SET order_id = 5 WHERE order_id = 1"), 'LK001',
		"after the update an UPDATE that leaves the token alone needs a declared token$in");
	is(sqlstate($db, "BEGIN; SELECT ${s}dlock_assert('job', $job); UPDATE payout SET order_id = 5 WHERE order_id = 1; UPDATE payout SET order_id = 1 WHERE order_id = 5; COMMIT;"), '',
		"after the update the holder's declared token lets it through$in");
	is(sql($db, "SELECT ${s}dlock_renew('job', $job, '1 hour')"), 't', "after the update renew$in");
	is($acquire->('leader', '1 hour', 'pod-1'), $leader,
		"after the update the owner renews and keeps its token$in");

	# The session from before the update goes on.
	is($session->query_safe("SELECT ${s}dlock_check('job', $job)"), 't',
		"the session from before the update checks after it$in");
	my $from_session = $session->query_safe("SELECT ${s}dlock_acquire('session', '1 hour')");
	cmp_ok($from_session, '>', $max, "the session from before the update gets a newer token$in");
	push @handed, $from_session;
	$session->quit;

	is(sql($db, "SELECT ${s}dlock_release('job', $job)"), 't', "after the update the old token releases the lease$in");
	my $next = $acquire->('job', '1 hour');
	cmp_ok($next, '>', $max, "after the update a new token is above every token handed out before$in");
	cmp_ok($next, '>', $from_session, "and above the tokens handed out since$in");
	is(sqlstate($db, "INSERT INTO payout VALUES (5, $job)"), 'LK001',
		"after a new acquisition the fence rejects the released token$in");
	is(sqlstate($db, "INSERT INTO payout VALUES (5, $next)"), '', "and accepts the new one$in");
	return;
}

upgrade_in('updated', undef);
sql('postgres', 'CREATE DATABASE fresh');
sql('fresh', 'CREATE EXTENSION dlock');
catalogs_match($node, 'fresh', $node, 'updated',
	'an updated database has exactly the objects of a fresh install of the default version');

upgrade_in('updated_locks', 'locks');
sql('postgres', 'CREATE DATABASE fresh_locks');
sql('fresh_locks', 'CREATE SCHEMA locks; CREATE EXTENSION dlock SCHEMA locks');
catalogs_match($node, 'fresh_locks', $node, 'updated_locks',
	'in a schema of its own too');

# The comparison sees a difference: a comment changed by hand is one.
sql('updated', q{COMMENT ON FUNCTION dlock_check(text, bigint) IS 'changed'});
my @a = catalog_facts($node, 'fresh');
my @b = catalog_facts($node, 'updated');
ok(join("\n", @a) ne join("\n", @b), 'the comparison notices a changed comment');

# The update from 1.1 names the fenced tables whose token column the fence
# refuses: not bigint, nor a domain over bigint (issue 24 item 11).
sql('postgres', 'CREATE DATABASE narrow');
sql('narrow', q{CREATE EXTENSION dlock VERSION '1.1';
CREATE DOMAIN int_token AS int;
CREATE DOMAIN big_token AS bigint;
CREATE TABLE narrow_int (id int, token int);
CREATE TABLE narrow_dom (id int, token int_token);
CREATE TABLE wide_big (id int, token bigint);
CREATE TABLE wide_dom (id int, token big_token);
CREATE TRIGGER f BEFORE INSERT OR UPDATE OR DELETE ON narrow_int FOR EACH ROW EXECUTE FUNCTION dlock_fence('n', 'token');
CREATE TRIGGER f BEFORE INSERT OR UPDATE OR DELETE ON narrow_dom FOR EACH ROW EXECUTE FUNCTION dlock_fence('n', 'token');
CREATE TRIGGER f BEFORE INSERT OR UPDATE OR DELETE ON wide_big FOR EACH ROW EXECUTE FUNCTION dlock_fence('n', 'token');
CREATE TRIGGER f BEFORE INSERT OR UPDATE OR DELETE ON wide_dom FOR EACH ROW EXECUTE FUNCTION dlock_fence('n', 'token');});
my ($stdout, $stderr) = ('', '');
$node->psql('narrow', 'ALTER EXTENSION dlock UPDATE', stdout => \$stdout, stderr => \$stderr);
like($stderr,
	qr/NOTICE:  dlock_fence refuses these token columns, whose type cannot hold every token: narrow_dom\.token \(int_token\), narrow_int\.token \(integer\)\n/,
	'the update from 1.1 names the token columns of type integer and of a domain over integer');
unlike($stderr, qr/wide_/, 'and not those of bigint or of a domain over bigint');
is(sqlstate('narrow', q{SELECT dlock_acquire('n', '1 min'); INSERT INTO wide_dom VALUES (1, NULL)}), 'LK001',
	'after the update a token column of a domain over bigint is accepted (a NULL token needs a declaration)');
is(sqlstate('narrow', q{INSERT INTO narrow_dom VALUES (1, NULL)}), '42804',
	'and one of a domain over integer is refused');

$node->stop;
done_testing();
