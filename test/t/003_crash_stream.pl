# Copyright (c) 2026, the dlock developers

# Crashes in the middle of a stream of acquisitions.
#
# Four clients (psql processes reading a script) acquire and release leases
# without pause: two on names of their own, two competing for shared names;
# one of each pair runs with synchronous_commit = off.  The test records
# every token each client received (printed by psql once the acquire
# returned), lets the stream run, and stops the server in immediate mode in
# the middle of it, more than 20 times; every other time only the
# synchronous_commit = off clients are running.  After each crash restart:
#
# - the first new acquisition beats every token any client received before
#   the crash, and so does every token the clients receive until the next
#   crash;
# - every lease whose acquire returned and that was never released is still
#   held, with its token, through this and all later crashes;
# - no lease row went back: each name's token is at least the last token a
#   client received for it.
#
# At the end: no token was ever received twice, each client received its
# tokens in increasing order, and the crashes did lose asynchronous commits
# the clients had seen (a control: synchronous_commit = off was in effect,
# and only dlock's forced synchronous commit kept the acquires).

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $crashes = 22;

my $node = PostgreSQL::Test::Cluster->new('stream');
$node->init;

# Keep unflushed WAL unflushed until the crash: the WAL writer wakes up only
# every 10s, and no autovacuum commit or background writer flushes WAL on
# the way.  An asynchronous commit is then lost unless a later synchronous
# one flushed it.
$node->append_conf(
	'postgresql.conf', q{
wal_writer_delay = '10s'
autovacuum = off
bgwriter_lru_maxpages = 0
});
$node->start;

sub sql
{
	my ($query) = @_;
	return $node->safe_psql('postgres', $query);
}

sql('CREATE EXTENSION dlock');

# Written by the clients with synchronous_commit = off after their acquires:
# counts the asynchronous commits the crashes lost.
sql('CREATE TABLE async_log (client text, epoch int, k int, j int)');

# Each client runs under its synchronous_commit, on names of its own
# ("own": a per-epoch churn name acquired and released, then a name acquired
# and kept) or on names shared with the other "shared" client (acquire with
# wait 0, release when it got the lease).
my @clients = (
	{ id => 'own_on',     sync => 'on',  kind => 'own' },
	{ id => 'own_off',    sync => 'off', kind => 'own' },
	{ id => 'shared_on',  sync => 'on',  kind => 'shared' },
	{ id => 'shared_off', sync => 'off', kind => 'shared' },);

# Far more than a client gets through before the crash.
my $iterations = 2000;

my $tmp = PostgreSQL::Test::Utils::tempdir();

sub client_script
{
	my ($c, $epoch) = @_;
	my $id = $c->{id};
	my $s = '';

	$s .= "SET synchronous_commit = off;\n" if $c->{sync} eq 'off';
	$s .= "SHOW synchronous_commit \\gset\n\\echo S :synchronous_commit\n";
	for my $k (1 .. $iterations)
	{
		if ($c->{kind} eq 'own')
		{
			my $churn = "$id/churn/$epoch";
			my $hold = "$id/hold/$epoch/$k";
			$s .= qq{SELECT dlock_acquire('$churn', '1 hour') AS t \\gset
\\echo A $churn :t
SELECT dlock_release('$churn', :t) AS r \\gset
\\echo R $churn :t :r
SELECT dlock_acquire('$hold', '1 hour') AS t \\gset
\\echo H $hold :t
};
		}
		else
		{
			my $name = "shared/$epoch/" . ($k % 3);
			$s .= qq{SELECT coalesce(dlock_acquire('$name', '1 hour'), 0) AS t \\gset
\\echo A $name :t
SELECT dlock_release('$name', :t) AS r \\gset
\\echo R $name :t :r
};
		}

		# A control: asynchronous commits the client sees, after the acquire.
		if ($c->{sync} eq 'off')
		{
			for my $j (1 .. 2)
			{
				$s .= qq{INSERT INTO async_log VALUES ('$id', $epoch, $k, $j);
\\echo I $k.$j
};
			}
		}
	}
	my $file = "$tmp/$id.$epoch.sql";
	open my $fh, '>', $file or die "could not write $file: $!";
	print $fh $s;
	close $fh;
	return $file;
}

sub start_client
{
	my ($c, $epoch) = @_;
	my $file = client_script($c, $epoch);
	my %r = (c => $c, out => '', err => '');

	$r{h} = IPC::Run::start(
		[
			$node->installed_command('psql'), '-XAtq',
			'-v', 'ON_ERROR_STOP=1',
			'-d', $node->connstr('postgres'),
			'-f', $file
		],
		'<', \undef, '>', \$r{out}, '2>', \$r{err},
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	return \%r;
}

# Number of tokens a client has printed so far.
sub tokens_seen
{
	my ($r) = @_;
	my $n = () = $r->{out} =~ /^[AH] \S+ [1-9]\d*$/mg;
	return $n;
}

# Every token received, in order, per client and epoch; every lease whose
# acquire returned and that nobody releases; the highest token received per
# name.
my %received;    # "$id/$epoch" => [tokens in order]
my @all_tokens;
my %hold;        # name => token
my %max_by_name; # name => token
my $max_before = 0;
my $async_sent = 0;
my $async_lost = 0;

sub max_of
{
	my $max = shift;
	for (@_) { $max = $_ if $_ > $max; }
	return $max;
}

# Lease rows that contradict what the clients received: a name missing or
# whose token went back, or a kept lease no longer held with its token.
# Returns their number and the five with the highest tokens.
sub lease_offenders
{
	my @rows = map {
		my $must_hold = exists $hold{$_} ? 'true' : 'false';
		"('$_', $max_by_name{$_}, $must_hold)"
	} sort keys %max_by_name;
	return (0, '') unless @rows;
	my $values = join(",\n", @rows);
	my $out = sql(
		qq{SELECT count(*), coalesce(string_agg(o, '; ' ORDER BY n) FILTER (WHERE n <= 5), '')
  FROM (SELECT v.name || ' received ' || v.token || ', row '
	|| coalesce(l.token::text || CASE WHEN l.held THEN ' held' ELSE ' free' END, 'missing') AS o,
	row_number() OVER (ORDER BY v.token DESC) AS n
  FROM (VALUES $values) AS v(name, token, must_hold)
  LEFT JOIN dlock_leases AS l USING (name)
 WHERE l.name IS NULL OR l.token < v.token
	OR (v.must_hold AND (NOT l.held OR l.token <> v.token))) AS bad
});
	my ($count, $first) = split /\|/, $out, 2;
	return ($count, $first);
}

for my $epoch (1 .. $crashes)
{
	# Every other crash hits a stream of the synchronous_commit = off clients
	# alone, so that no synchronous commit of another client flushes their
	# WAL just before the crash.
	my $async_only = $epoch % 2 == 0;
	my @running = map { start_client($_, $epoch) }
	  grep { !$async_only || $_->{sync} eq 'off' } @clients;

	# Let the stream run until every client has received a few tokens (a
	# different number each time), then crash the server under it.
	my $want = 2 + ($epoch * 7) % 11;
	my $deadline = time + 30;
	while (time < $deadline)
	{
		my $ready = 0;
		for my $r (@running)
		{
			$r->{h}->pump_nb if $r->{h}->pumpable;
			$ready++ if tokens_seen($r) >= $want || !$r->{h}->pumpable;
		}
		last if $ready == @running;
		select(undef, undef, undef, 0.005);
	}

	my $offset = -s $node->logfile;
	$node->stop('immediate');

	# The clients notice the crash and exit; collect what they received.
	my $cut = 0;
	my @not_cut;
	my @epoch_tokens;
	my %async_ok;
	for my $r (@running)
	{
		$r->{h}->finish;
		my $id = $r->{c}{id};
		if ($r->{err} =~
			/server closed the connection unexpectedly|connection to server was lost|terminating connection/
		  )
		{
			$cut++;
		}
		else
		{
			push @not_cut, "$id: " . ($r->{err} || 'no error, exited');
		}

		my @mine;
		for my $line (split /\n/, $r->{out})
		{
			if ($line =~ /^S (\S+)$/)
			{
				$r->{c}{seen_sync}{$1} = 1;
			}
			elsif ($line =~ /^([AH]) (\S+) (\d+)$/)
			{
				my ($kind, $name, $t) = ($1, $2, $3);
				next if $t == 0;    # busy, shared names only
				push @mine, $t;
				$max_by_name{$name} = max_of($t, $max_by_name{$name} // 0);
				$hold{$name} = $t if $kind eq 'H';
			}
			elsif ($line =~ /^[AH] /)
			{
				$r->{c}{bad_lines}++;
				diag("crash $epoch, $id: $line");
			}
			elsif ($line =~ /^I (\d+\.\d+)$/)
			{
				$async_ok{"$id/$1"} = 1;
			}
		}
		$received{"$id/$epoch"} = \@mine;
		push @epoch_tokens, @mine;
	}
	is($cut, scalar @running,
		"crash $epoch: the crash cut off every client in the middle of its stream"
	) or diag(join("\n", @not_cut));
	cmp_ok(scalar @epoch_tokens, '>=', $want * 2,
		"crash $epoch: the clients received tokens before the crash");
	my ($epoch_min) = sort { $a <=> $b } @epoch_tokens;
	cmp_ok($epoch_min // 0, '>', $max_before,
		"crash $epoch: every token received since the last restart beats every token received before it"
	);
	push @all_tokens, @epoch_tokens;
	$max_before = max_of($max_before, @epoch_tokens);

	$node->start;
	ok( $node->log_contains(
			qr/database system was not properly shut down; automatic recovery in progress/,
			$offset),
		"crash $epoch: the start ran crash recovery");

	# Before anything else draws a token: a repeated token shows here.
	my $probe = sql("SELECT dlock_acquire('probe/$epoch', '1 hour')");
	cmp_ok($probe, '>', $max_before,
		"crash $epoch: the first acquire after the restart beats every token received before the crash"
	);
	push @all_tokens, $probe;
	$max_before = $probe;

	my ($offenders, $first) = lease_offenders();
	is($offenders, 0,
		"crash $epoch: every kept lease is held with its token, and no lease went back"
	) or diag("for example: $first");

	# The asynchronous inserts the clients saw commit: how many were lost.
	my %kept = map { $_ => 1 } split /\n/,
	  sql("SELECT client || '/' || k || '.' || j FROM async_log WHERE epoch = $epoch");
	my $lost = grep { !$kept{$_} } keys %async_ok;
	note "crash $epoch: $lost asynchronous commits lost";
	$async_sent += scalar keys %async_ok;
	$async_lost += $lost;
}

my %count;
my @dups = grep { $count{$_}++ == 1 } @all_tokens;
is(scalar @dups, 0, 'no token was received twice')
  or diag("tokens received twice: @dups");

my @unordered = grep {
	my @t = @{ $received{$_} };
	grep { $t[$_] <= $t[ $_ - 1 ] } 1 .. $#t;
} sort keys %received;
is("@unordered", '', 'each client received its tokens in increasing order');

for my $c (@clients)
{
	is(join(',', sort keys %{ $c->{seen_sync} }),
		$c->{sync}, "$c->{id}: ran with synchronous_commit = $c->{sync}");
	ok(!$c->{bad_lines}, "$c->{id}: every acquire of a free name returned a token");
}

note "tokens received: " . scalar(@all_tokens)
  . ", kept leases checked: " . scalar(keys %hold)
  . ", asynchronous inserts lost to the crashes: $async_lost of $async_sent";
cmp_ok($async_lost, '>', 0,
	'control: the crashes lost asynchronous commits that the clients had seen');

$node->stop;

done_testing();
