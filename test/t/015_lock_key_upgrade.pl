# Copyright (c) 2026, the dlock developers
# A backend still running the 1.1 library across ALTER EXTENSION UPDATE to
# 1.2 (issue 24, item 3): from the update on, it refuses every dlock call,
# since it would key names the 1.1 way while the rest of the database keys
# them with the secret.
#
# The 1.1 library is built by test/run from git history (commit 3dc7580)
# into tmp_dlock-1.1/dlock.so; without it this test skips.  The cluster
# runs from a private copy of the installation's bin directory, whose
# library directory holds the 1.1 dlock.so first: a session loads it, then
# the installed 1.2 library replaces the file (a rename, as a package
# upgrade does), and the session keeps the code it loaded.  Its DDL goes
# on working (the event trigger dlock_fence_ddl is PL/pgSQL).

use strict;
use warnings;

use File::Basename;
use File::Copy;
use File::Path qw(make_path);
use FindBin;
use lib "$FindBin::Bin/../lib";

use DlockTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $old_so = "$FindBin::Bin/../../tmp_dlock-1.1/dlock.so";
# A skip still counts as a test, so that a run of this file alone passes.
unless (-f $old_so)
{
  SKIP:
	{
		skip 'no 1.1 library (test/run builds it from git history: commit 3dc7580)', 1;
	}
	done_testing();
	exit 0;
}

sub pg_config
{
	my ($what) = @_;
	my $v = `pg_config --$what`;
	chomp $v;
	return $v;
}

# A private installation: bin copied (the server finds its libraries
# relative to its own executable), libdir and pkglibdir as directories of
# links to the real files, except pkglibdir's dlock.so; sharedir a link.
my $root = PostgreSQL::Test::Utils::tempdir();
my ($bindir, $libdir, $pkglibdir, $sharedir) =
  map { pg_config($_) } qw(bindir libdir pkglibdir sharedir);
sub mirror_links
{
	my ($dir) = @_;
	make_path("$root$dir");
	opendir(my $dh, $dir) or die "cannot read $dir: $!";
	for my $f (readdir $dh)
	{
		next if $f eq '.' || $f eq '..' || -e "$root$dir/$f";
		symlink("$dir/$f", "$root$dir/$f") or die "symlink $dir/$f: $!";
	}
	closedir $dh;
}
make_path("$root$bindir");
opendir(my $bh, $bindir) or die "cannot read $bindir: $!";
for my $f (grep { -f "$bindir/$_" } readdir $bh)
{
	copy("$bindir/$f", "$root$bindir/$f") or die "copy $f: $!";
	chmod 0755, "$root$bindir/$f";
}
closedir $bh;
make_path("$root$pkglibdir");
copy($old_so, "$root$pkglibdir/dlock.so") or die "copy the 1.1 library: $!";
mirror_links($pkglibdir);
mirror_links($libdir);
make_path(dirname("$root$sharedir"));
symlink($sharedir, "$root$sharedir") or die "symlink $sharedir: $!"
  unless -e "$root$sharedir";

# PostgreSQL 14's compatibility shim takes new('name', install_path => ...)
# for its old (name, host, port) arguments: call get_new_node there.
my $inst = dirname("$root$bindir");
my $node =
  PostgreSQL::Test::Cluster->can('get_new_node')
  ? PostgreSQL::Test::Cluster->get_new_node('key_upgrade', install_path => $inst)
  : PostgreSQL::Test::Cluster->new('key_upgrade', install_path => $inst);
$node->init;
$node->start;
$node->safe_psql('postgres', q{CREATE EXTENSION dlock VERSION '1.1'});

# Is the key of the check lock a session takes on 'payouts' the 1.1 one?
sub key_is_1_1
{
	my ($session, $token) = @_;
	$session->query_safe('BEGIN');
	$session->query_safe("SELECT dlock_check('payouts', $token)");
	my $r = $session->query_safe(
		q{SELECT (classid::bigint << 32 | objid::bigint) = hashtextextended('payouts', 0)
		    FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 17484 AND pid = pg_backend_pid()});
	$session->query_safe('COMMIT');
	return $r;
}

# The session that loads the 1.1 library, and uses it.
my $old = $node->background_psql('postgres', on_error_stop => 0);
my $held = $old->query_safe(q{SELECT dlock_acquire('payouts', '1 hour')});
like($held, qr/^\d+$/, 'the 1.1 library acquires before the update');
is($old->query_safe(q{SELECT dlock_check('payouts', } . $held . ')'), 't',
	'the 1.1 library checks before the update');
is(key_is_1_1($old, $held), 't', 'the 1.1 library keys names with hashtextextended(name, 0)');

# Install the 1.2 library the way a package does: a new file renamed over
# the old one.  The old session keeps the code it loaded.
copy("$pkglibdir/dlock.so", "$root$pkglibdir/dlock.so.new") or die "copy the 1.2 library: $!";
rename("$root$pkglibdir/dlock.so.new", "$root$pkglibdir/dlock.so") or die "rename: $!";
# A transaction that checked a name under its 1.1 key and is still open
# makes the update refuse (review 2, finding 1): once updated, the next
# holder would not see that check, and could get its token before the
# transaction's fenced write commits.  Nothing changes.
$old->query_safe('BEGIN');
is($old->query_safe(qq{SELECT dlock_check('payouts', $held)}), 't',
	'an open transaction checks under the 1.1 key');
my ($rc, $out, $err) = (0, '', '');
$rc = $node->psql('postgres', "\\set VERBOSITY verbose\nALTER EXTENSION dlock UPDATE",
	stdout => \$out, stderr => \$err);
isnt($rc, 0, 'the update fails while a check under the 1.1 key is open');
like($err,
	qr/ERROR:  55000: cannot update extension "dlock" to version 1\.2 while other transactions hold dlock locks\n.*DETAIL:  They hold them under the lock keys of version 1\.1\.  Process IDs: \d+\./s,
	'the update says which backends hold the locks, with SQLSTATE 55000');
is($node->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'dlock'}),
	'1.1', 'the refused update changes nothing');
$old->query_safe('COMMIT');
$node->safe_psql('postgres', 'ALTER EXTENSION dlock UPDATE');
is($node->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'dlock'}),
	'1.2', 'updated to 1.2 with the 1.1 session still open');

# A 1.2 backend holds a check on a name, in an open transaction.
my $new = $node->background_psql('postgres', on_error_stop => 0);
my $tok = $new->query_safe(q{SELECT dlock_acquire('shared', '1 hour')});
like($tok, qr/^\d+$/, 'a 1.2 backend acquires after the update');
$new->query_safe(q{BEGIN; SELECT dlock_check('shared', } . $tok . ');');

# The 1.1 session refuses every call, first of all the check of that name.
my %calls = (
	'check of the name the 1.2 backend checks' => qq{SELECT dlock_check('shared', $tok)},
	'acquire' => q{SELECT dlock_acquire('other', '1 hour')},
	'release' => qq{SELECT dlock_release('payouts', $held)},
	'renew' => qq{SELECT dlock_renew('payouts', $held, '1 hour')},
	'assert' => qq{SELECT dlock_assert('payouts', $held)},);
for my $what (sort keys %calls)
{
	$old->{stderr} = '';
	my $out = $old->query($calls{$what});
	like(
		$old->{stderr},
		qr/ERROR:  relation "dlock_lease" of extension "dlock" has \d+ columns, which this version of the library does not expect/,
		"the 1.1 session refuses after the update: $what");
	unlike($out // '', qr/^(t|f|\d+)$/m, "the 1.1 session answers nothing: $what");
}

# 1.2 backends go on; the lease acquired with the 1.1 library is still there.
$new->query_safe('COMMIT');
is($new->query_safe(qq{SELECT dlock_check('payouts', $held)}), 't',
	'a 1.2 backend checks the lease acquired with the 1.1 library');
is(key_is_1_1($new, $held), 'f', 'a 1.2 backend keys names with the secret, not the 1.1 function');
is($new->query_safe(qq{SELECT dlock_release('payouts', $held)}), 't',
	'a 1.2 backend releases it');
is(query_sqlstate($node, 'postgres', qq{SELECT dlock_release('shared', $tok)}), '',
	'a new session uses the 1.2 library');

# DDL in the 1.1 session works and warns: the event trigger the update
# created is PL/pgSQL and needs no dlock library (issue 24, item 7).
$old->{stderr} = '';
my $ddl = $old->query(
	q{CREATE TABLE old_ddl (id int, token bigint);
	  CREATE TRIGGER old_ddl_fence BEFORE INSERT ON old_ddl
	    FOR EACH ROW WHEN (NEW.id > 0) EXECUTE FUNCTION dlock_fence('x', 'token');
	  ALTER TABLE old_ddl ENABLE REPLICA TRIGGER old_ddl_fence;
	  SELECT count(*) FROM pg_trigger WHERE tgname = 'old_ddl_fence' AND tgenabled = 'R';});
like($ddl // '', qr/^1$/m,
	'the 1.1 session runs CREATE TABLE, CREATE TRIGGER and ALTER TABLE after the update');
unlike($old->{stderr}, qr/ERROR/, 'the 1.1 session\'s DDL raises no error');
like(
	$old->{stderr},
	qr/WARNING:  trigger "old_ddl_fence" on relation "old_ddl" does not fence it\n.*WHEN condition.*\n(?s:.*)WARNING:  trigger "old_ddl_fence" on relation "old_ddl" does not fence it\n.*replicas only/,
	'the 1.1 session gets the event trigger\'s warnings for CREATE TRIGGER and ALTER TABLE');

$old->quit;
$new->quit;
$node->stop;
done_testing();
