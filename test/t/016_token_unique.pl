# Copyright (c) 2026, the dlock developers

# Tokens are unique across all names (src/token.c): no two committed
# acquisitions ever get the same token, while jumps run under a load of
# acquisitions of many names.  Eight pgbench clients acquire and release
# random names out of 20,000, each acquire recording its token in a ledger
# in the same transaction, while this script runs, over and over:
#
# 1. dlock_rebase() with the counter below the clock;
# 2. a setval() of the counter above the clock, then dlock_rebase(), in
#    turn (each jump then finds the counter past every other bound, so it
#    sets the counter to the value it drew itself);
# 3. the server's clock stepped back by three hours (libfaketime: the
#    server runs under it, and the offset is read from a file), then
#    dlock_rebase(); the clock is put right again.
#
# Then every committed token must be distinct, over all names.  Before
# 1.2, each jump set the counter back under the tokens the clients drew
# while it scanned the lease table, and tokens repeated.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time sleep);

my ($libfaketime) =
  grep { -e $_ } map { "$_/faketime/libfaketime.so.1" }
  qw(/usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib);
BAIL_OUT('libfaketime not found (Debian package faketime)')
  unless $libfaketime;

my $rc = "$PostgreSQL::Test::Utils::tmp_check/faketime_015.rc";
my $node;

# The server's clock minus the real one, in seconds.
sub clock_offset
{
	return $node->safe_psql('postgres',
		'SELECT extract(epoch FROM clock_timestamp())') - time();
}

# Step the server's clock to offset hours from the real one, and wait until
# new backends see it (libfaketime reads the file again once its cache of
# FAKETIME_CACHE_DURATION seconds is over).
sub set_offset
{
	my ($hours) = @_;
	open my $fh, '>', "$rc.new" or die "cannot write $rc.new: $!";
	printf $fh "%+dh\n", $hours;
	close $fh;
	rename "$rc.new", $rc or die "cannot rename to $rc: $!";
	return 1 unless $node;
	for (1 .. 100)
	{
		return 1 if abs(clock_offset() - $hours * 3600) < 600;
		sleep 0.2;
	}
	return 0;
}
set_offset(0);

$node = PostgreSQL::Test::Cluster->new('unique');
$node->init;
$node->append_conf('postgresql.conf', "max_connections = 40\n");
{
	local $ENV{LD_PRELOAD} = $libfaketime;
	local $ENV{FAKETIME_TIMESTAMP_FILE} = $rc;
	local $ENV{FAKETIME_CACHE_DURATION} = '1';
	local $ENV{FAKETIME_DONT_FAKE_MONOTONIC} = '1';
	$node->start;
}

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{CREATE EXTENSION dlock;
CREATE TABLE ledger (name text NOT NULL, token bigint NOT NULL);
CREATE TABLE busy (name text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE TABLE stuck (name text NOT NULL)});

# The server's clock follows the file.
ok(set_offset(-3), 'faketime: the server clock steps back by three hours');
ok(set_offset(0), 'faketime: and forward again');

# The load: one statement acquires and records, so the ledger holds
# exactly the tokens of committed acquisitions.  Each client has names of
# its own, free whenever it acquires one: an acquire with wait 0 that
# answers busy (recorded in "busy") met a draw or a jump of another
# backend, which a free name must never show (the jump lock is held for a
# few instructions only, and always waited for: src/token.c).  Except for
# the clock steps: a lease taken while the clock was back whose release
# came after the clock was put right had expired then (its release returns
# false, the name is recorded in "stuck"), and when the clock steps back
# again it is held once more until its expiry, on the server's clock.
my $script = "$PostgreSQL::Test::Utils::tmp_check/unique_015.sql";
open my $fh, '>', $script or die "cannot write $script: $!";
print $fh <<'EOF';
\set n random(1, 2500)
WITH a AS (SELECT dlock_acquire('u' || :client_id || '/' || :n, '1 min') AS t),
     l AS (INSERT INTO ledger SELECT 'u' || :client_id || '/' || :n, t FROM a WHERE t IS NOT NULL RETURNING token),
     b AS (INSERT INTO busy SELECT 'u' || :client_id || '/' || :n FROM a WHERE t IS NULL)
SELECT coalesce(max(token), 0) AS tok FROM l \gset
\if :tok > 0
INSERT INTO stuck SELECT 'u' || :client_id || '/' || :n
 WHERE NOT dlock_release('u' || :client_id || '/' || :n, :tok);
\endif
EOF
close $fh;

my $seconds = 24;
my ($out, $err) = ('', '');
my $pgbench = IPC::Run::start(
	[
		'pgbench', '-n', '-c', '8', '-j', '2', '-T', $seconds,
		'-f', $script, '-h', $node->host, '-p', $node->port, 'postgres'
	],
	'>', \$out, '2>', \$err);

# The jumps, in rounds, until the load ends.
my %jumps = (rebase => 0, setval => 0, clock => 0);
my $clock_ok = 1;
my $end = time() + $seconds - 2;
sleep 1;
while (time() < $end)
{
	sql('SELECT count(dlock_rebase()) FROM generate_series(1, 20)');
	$jumps{rebase} += 20;

	sql(q{DO $$
BEGIN
	FOR i IN 1 .. 20 LOOP
		PERFORM pg_catalog.setval('dlock_token_seq',
			(SELECT last_value FROM dlock_token_seq) + 10000000000);
		PERFORM dlock_rebase();
	END LOOP;
END
$$});
	$jumps{setval} += 20;

	$clock_ok &&= set_offset(-3);
	sql('SELECT count(dlock_rebase()) FROM generate_series(1, 20)');
	$jumps{clock} += 20;
	$clock_ok &&= set_offset(0);
}
ok($pgbench->finish, 'the load ran without errors') or diag($err);
ok($clock_ok, 'every step of the clock took effect');
note("jumps: rebase $jumps{rebase}, setval $jumps{setval}, clock $jumps{clock}");

my $n = sql('SELECT count(*) FROM ledger');
cmp_ok($n, '>', 500, "the load committed acquisitions ($n)");
cmp_ok(sql("SELECT count(*) FROM dlock_epoch WHERE reason = 'rebase'"),
	'>=', $jumps{rebase} + $jumps{setval} + $jumps{clock},
	'every rebase was recorded');

my $dups = sql(q{SELECT count(*) || ' ' || coalesce(min(token)::text, '')
  FROM (SELECT token FROM ledger GROUP BY token HAVING count(*) > 1) d});
is($dups, '0 ', 'no token was handed out to two committed acquisitions');
my $busy = q{FROM busy WHERE name NOT IN (SELECT name FROM stuck)};
is(sql("SELECT count(*) $busy"),
	'0', 'no acquire of a free name answered busy while the counter jumped')
  or diag(sql("SELECT string_agg(name || ' at ' || at, ', ' ORDER BY at) $busy"));
note('names a clock step kept held: ' . sql('SELECT count(*) FROM stuck'));

# And the last of it: a fresh acquire is above everything in the ledger.
my $t = sql(q{SELECT dlock_acquire('u/after', '1 min')});
cmp_ok($t, '>', sql('SELECT max(token) FROM ledger'),
	'a new token is above every token handed out before');

$node->stop;
done_testing();
