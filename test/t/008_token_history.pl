# Copyright (c) 2026, the dlock developers

# Tokens never repeat, whatever an operator does inside one cluster
# (src/token.c).  After each event, every new token is greater than every
# token handed out before it, for any name and for its own name:
#
# 1. A database still on the 1.0 objects keeps working with this library,
#    and ALTER EXTENSION UPDATE moves it onto the new scheme.
# 2. ALTER SEQUENCE ... RESTART, below the last floor and above it.
# 3. setval() above the last floor (caught per name), then dlock_rebase().
# 4. dlock_rebase(): who may call it.
# 5. DROP EXTENSION and CREATE EXTENSION; with a counter ahead of the
#    clock, the carry-over of docs/tokens.md and dlock_rebase(at_least).
# 6. CREATE DATABASE ... TEMPLATE, then tokens in both databases.
# 7. The refusals: an unlogged lease table, epoch table or counter, and
#    counter settings under which a token could repeat or go down.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../lib";
use DlockTest;

my $node = PostgreSQL::Test::Cluster->new('history');
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

# Every token each database handed out, and the last token of each name.
my %handed;    # db => [tokens]
my %last;      # db => { name => token }

sub max_of
{
	my $max = 0;
	for (@_) { $max = $_ if $_ > $max; }
	return $max;
}

# Acquire name in db, check the token against everything before, release
# it unless asked to keep it.
sub acquire_checked
{
	my ($db, $name, $label, $keep) = @_;
	my $before = max_of(@{ $handed{$db} || [] });
	my $t = sql($db, "SELECT dlock_acquire('$name', '1 hour')");
	like($t, qr/^\d+$/, "$label: $name acquired");
	cmp_ok($t, '>', $before,
		"$label: $name gets a token above every token handed out before");
	cmp_ok($t, '>', $last{$db}{$name}, "$label: $name gets a token above its last")
	  if defined $last{$db}{$name};
	push @{ $handed{$db} }, $t;
	$last{$db}{$name} = $t;
	sql($db, "SELECT dlock_release('$name', $t)") unless $keep;
	return $t;
}

sub latest_reason
{
	my ($db) = @_;
	return sql($db, 'SELECT reason FROM dlock_epoch ORDER BY floor DESC LIMIT 1');
}

# 1. The 1.0 objects, then the update.
sql('postgres', 'CREATE DATABASE v10');
sql('v10', q{CREATE EXTENSION dlock VERSION '1.0'});
for my $i (1 .. 3)
{
	acquire_checked('v10', "v10/$i", '1.0 objects');
}
cmp_ok(max_of(@{ $handed{v10} }), '<', 1 << 44,
	'1.0 objects: tokens keep the 1.0 scheme (timeline 1: below 1 << 44)');
sql('v10', 'ALTER EXTENSION dlock UPDATE');
is(sql('v10', 'SELECT count(*) FROM dlock_epoch'), '0',
	'update: no jump before the first draw');
for my $i (1 .. 3)
{
	acquire_checked('v10', "v10/$i", 'updated');
}
is(latest_reason('v10'), 'first', 'updated: the first draw jumped');
is(sql('v10', 'SELECT count(*) FROM dlock_epoch'), '1',
	'updated: one jump, later draws reuse it');

# The main database.
sql('postgres', 'CREATE DATABASE app');
sql('app', 'CREATE EXTENSION dlock');
my $clock = sql('app',
	q{SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint});
my $first = acquire_checked('app', 'a', 'fresh');
cmp_ok($first, '>', $clock, 'fresh: the first token is above the server clock');
acquire_checked('app', "n/$_", 'fresh') for 1 .. 5;
acquire_checked('app', 'held', 'fresh', 1);

# 2. ALTER SEQUENCE ... RESTART below the floor, then above it.
sql('app', 'ALTER SEQUENCE dlock_token_seq RESTART WITH 1');
acquire_checked('app', 'new/after-restart-1', 'restart below the floor');
acquire_checked('app', 'a', 'restart below the floor');
is(latest_reason('app'), 'counter', 'restart below the floor: jumped (new counter)');

my $high = max_of(@{ $handed{app} });
acquire_checked('app', "m/$_", 'more draws') for 1 .. 5;
sql('app', "ALTER SEQUENCE dlock_token_seq RESTART WITH " . ($high + 2));
acquire_checked('app', 'new/after-restart-2', 'restart above the floor');
is(latest_reason('app'), 'counter', 'restart above the floor: jumped (new counter)');

# 3. setval() above the floor: the name whose row carries a higher token is
# caught; then dlock_rebase() puts every token above.
my $floor = sql('app', 'SELECT max(floor) FROM dlock_epoch');
acquire_checked('app', "s/$_", 'before setval') for 1 .. 5;
sql('app', 'SELECT setval(\'dlock_token_seq\', ' . ($floor + 1) . ')');
acquire_checked('app', 's/3', 'setval above the floor (per name)');
is(latest_reason('app'), 'lease', 'setval above the floor: the name\'s row made it jump');
sql('app', 'SELECT setval(\'dlock_token_seq\', ' . ($floor + 1) . ')');
my $rebase = sql('app', 'SELECT dlock_rebase()');
cmp_ok($rebase, '>', max_of(@{ $handed{app} }),
	'dlock_rebase: the new floor is above every token handed out');
is(latest_reason('app'), 'rebase', 'dlock_rebase: recorded');
acquire_checked('app', 'new/after-rebase', 'after dlock_rebase');

# 4. Who may call dlock_rebase().
sql('app', q{CREATE ROLE alice LOGIN; GRANT EXECUTE ON FUNCTION dlock_rebase() TO alice;
GRANT EXECUTE ON FUNCTION dlock_rebase(bigint) TO alice});
sql('app', 'CREATE ROLE mallory LOGIN');
is(sqlstate('app', 'SET ROLE mallory; SELECT dlock_rebase()'),
	'42501', 'dlock_rebase: revoked from PUBLIC');
is(sqlstate('app', 'SET ROLE alice; SELECT dlock_rebase()'),
	'42501', 'dlock_rebase: EXECUTE alone is not enough (checked in C)');
is(sqlstate('app', 'SET ROLE mallory; SELECT dlock_rebase(1)'),
	'42501', 'dlock_rebase(at_least): revoked from PUBLIC');
is(sqlstate('app', 'SET ROLE alice; SELECT dlock_rebase(1)'),
	'42501', 'dlock_rebase(at_least): EXECUTE alone is not enough (checked in C)');
sql('postgres', 'CREATE ROLE extowner SUPERUSER LOGIN; CREATE DATABASE owned OWNER extowner');
$node->safe_psql('owned', 'CREATE EXTENSION dlock', extra_params => [ '-U', 'extowner' ]);
sql('postgres', 'ALTER ROLE extowner NOSUPERUSER');
my ($ret, $out, $err) = $node->psql('owned', 'SELECT dlock_rebase() > 0',
	extra_params => [ '-U', 'extowner' ]);
is($out, 't', 'dlock_rebase: the owner of the extension may call it');

# 5. DROP EXTENSION and CREATE EXTENSION.
sql('app', 'DROP EXTENSION dlock; CREATE EXTENSION dlock');
delete $last{app};    # the rows went with the extension
acquire_checked('app', 'a', 'drop and create');
acquire_checked('app', 'new/after-recreate', 'drop and create');
is(latest_reason('app'), 'first', 'drop and create: jumped');

# 5b. A counter ahead of the clock (dlock_rebase(at_least) put it there)
# does not survive DROP EXTENSION: the floor went with dlock_epoch.  The
# carry-over of docs/tokens.md keeps it, in one transaction.
sql('postgres', 'CREATE DATABASE carry');
sql('carry', 'CREATE EXTENSION dlock');
$clock = sql('carry',
	q{SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint});
my $ahead = $clock + 1_000_000_000_000;
cmp_ok(sql('carry', "SELECT dlock_rebase($ahead)"), '>=', $ahead,
	'dlock_rebase(at_least): the floor is at least at_least');
cmp_ok(acquire_checked('carry', "c/$_", 'ahead'), '>', $ahead,
	'dlock_rebase(at_least): tokens above at_least') for 1 .. 3;
cmp_ok(sql('carry', 'SELECT dlock_rebase(1)'), '>', $ahead,
	'dlock_rebase(at_least) never lowers the counter');
# The carry-over of docs/tokens.md, one statement at a time, while other
# sessions acquire between its steps (review 2, finding 2): a token drawn
# after the carry was read, before the drop, would be above the carry, and
# the new extension would hand it out again.  The lock on dlock_lease keeps
# them out until the commit (with no wait they are busy: 0).  Acquires
# right after BEGIN come before the carry is read.
my $proc = $node->background_psql('carry', on_error_stop => 1);
my $concurrent = 0;
my $n = 0;
sub acquire_meanwhile
{
	my ($locked) = @_;
	my $t = sql('carry', q{SELECT dlock_acquire('c/meanwhile/} . ++$n . q{', '1 hour')});
	push @{ $handed{carry} }, $t if $t > 0;
	$concurrent++ if $t > 0 && $locked;
}
for my $step (
	'BEGIN',
	'LOCK TABLE dlock_lease IN ACCESS EXCLUSIVE MODE',
	q{SELECT greatest((SELECT last_value FROM dlock_token_seq),
                (SELECT max(floor) FROM dlock_epoch),
                (SELECT max(token) FROM dlock_lease)) AS carry \gset},
	'DROP EXTENSION dlock',
	'CREATE EXTENSION dlock',
	'SELECT dlock_rebase(:carry) > 0 AS rebased')
{
	$proc->query_safe($step);
	# From the drop on, an acquire waits for the commit (the dropped
	# objects are locked): the window is before it.
	acquire_meanwhile($step ne 'BEGIN')
	  for $step =~ /^(BEGIN|LOCK|SELECT greatest)/ ? 1 .. 3 : ();
}
$proc->query_safe('COMMIT');
$proc->quit;
is($concurrent, 0, 'the carry-over: no token drawn from the lock on');
delete $last{carry};
acquire_checked('carry', "c/$_", 'drop and create with the carry-over')
  for 1 .. 3;
sql('carry', 'DROP EXTENSION dlock; CREATE EXTENSION dlock');
cmp_ok(sql('carry', q{SELECT dlock_acquire('c/lost', '1 min')}), '<', $ahead,
	'drop and create without it: the counter ahead of the clock is lost (documented)');
is(sqlstate('carry', 'SELECT dlock_rebase(NULL)'), '22004',
	'dlock_rebase(NULL): 22004');
is(sqlstate('carry', 'SELECT dlock_rebase(-1)'), '22023',
	'dlock_rebase(-1): 22023');

# 6. CREATE DATABASE ... TEMPLATE: tokens in both go on above.
acquire_checked('app', 'held2', 'before the copy', 1);
sql('postgres', 'CREATE DATABASE app_copy TEMPLATE app');
$handed{app_copy} = [ @{ $handed{app} } ];
$last{app_copy} = { %{ $last{app} } };
acquire_checked('app_copy', 'a', 'copy');
is(latest_reason('app_copy'), 'database', 'copy: jumped (new database)');
acquire_checked('app', 'a', 'template');
acquire_checked('app_copy', 'new/copy', 'copy');
acquire_checked('app', 'new/template', 'template');
is(sql('app_copy', q{SELECT dlock_acquire('held2', '1 hour')}), '',
	'copy: a lease held in the template is held in the copy');

# 7. The refusals: 55000, nothing handed out, tokens go on above once fixed.
my @refusals = (
	[ 'unlogged lease table', 'ALTER TABLE dlock_lease SET UNLOGGED', 'ALTER TABLE dlock_lease SET LOGGED' ],
	[ 'unlogged epoch table', 'ALTER TABLE dlock_epoch SET UNLOGGED', 'ALTER TABLE dlock_epoch SET LOGGED' ],
	[ 'CACHE 2', 'ALTER SEQUENCE dlock_token_seq CACHE 2', 'ALTER SEQUENCE dlock_token_seq CACHE 1' ],
	[ 'CYCLE', 'ALTER SEQUENCE dlock_token_seq CYCLE', 'ALTER SEQUENCE dlock_token_seq NO CYCLE' ],
	[ 'INCREMENT -1', 'ALTER SEQUENCE dlock_token_seq INCREMENT -1 MINVALUE -10', 'ALTER SEQUENCE dlock_token_seq INCREMENT 1 MINVALUE 1' ],
	[ 'MAXVALUE below bigint', 'ALTER SEQUENCE dlock_token_seq MAXVALUE 9000000000000000000', 'ALTER SEQUENCE dlock_token_seq NO MAXVALUE' ],
);
# Unlogged sequences exist from PostgreSQL 15 on.
push @refusals,
  [ 'unlogged counter', 'ALTER SEQUENCE dlock_token_seq SET UNLOGGED', 'ALTER SEQUENCE dlock_token_seq SET LOGGED' ]
  if sql('postgres', 'SHOW server_version_num') >= 150000;
for my $r (@refusals)
{
	my ($label, $break, $fix) = @$r;
	sql('app', $break);
	my $rows = sql('app', 'SELECT count(*) FROM dlock_lease');
	is(sqlstate('app', q{SELECT dlock_acquire('refused', '1 hour')}),
		'55000', "refused: $label");
	is(sql('app', 'SELECT count(*) FROM dlock_lease'), $rows,
		"refused: $label: nothing written");
	sql('app', $fix);
	acquire_checked('app', 'refused', "fixed: $label");
}
like(
	(   $node->psql('app', q{SELECT dlock_acquire('y', '1 hour') > 0;
ALTER SEQUENCE dlock_token_seq CACHE 3;
SELECT dlock_acquire('x', '1 hour');})
	)[2],
	qr/sequence "dlock_token_seq" of extension "dlock" could hand out tokens out of order/,
	'refused: a backend that drew before the change refuses after it, naming the sequence and the danger');
sql('app', 'ALTER SEQUENCE dlock_token_seq CACHE 1');

$node->stop;

done_testing();
