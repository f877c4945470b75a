#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
#
# test/sql_edition/token_unique.sh, run by run.sh tokens: in the SQL
# edition, no two committed acquisitions get the same token, over all
# names, while jumps run under load (the spirit of test/t/016_token_unique.pl).
# Six pgbench clients (as dlock_owner) acquire random names out of 2,000,
# each recording its token in a ledger in the same transaction, while this
# script, over and over: calls dlock_rebase(); sets the counter above the
# clock and rebases a hundred times in a row; steps the server's clock back by three hours (with
# libfaketime, DLOCK_SQL_FAKETIME names its offset file) and rebases.
# pg_control_system() is revoked, so the clock rule makes draws jump on
# their own too.  Then every token in the ledger must be distinct, and each
# name's tokens must rise in the order of its acquisitions.  Beside them two
# clients acquire (wait => 0) and release names of their own, always free,
# and the busy answers they got are printed, for information only: a jump
# no longer makes them (the jump lock is waited for), but the lock
# manager's short waits beyond wait => 0's 1 ms bound still can under load
# (docs/editions.md, Known gaps).  Names a clock step kept held are not
# counted (taken while the clock was back, expired when their release came,
# and held again at the next step back).
set -euo pipefail
psql=(psql -X -q -At -v ON_ERROR_STOP=1 -U dlock_owner -d dlock_sql_test)
"${psql[@]}" <<-'SQL'
	CREATE TABLE public.tok_ledger (n bigserial, name text, token int8 NOT NULL);
	CREATE FUNCTION public.tok_take(name text) RETURNS void LANGUAGE plpgsql AS $$
	DECLARE t int8 := dlock.dlock_acquire(name, '20 ms');
	BEGIN
		IF t IS NOT NULL THEN
			-- n in the order of the name's hand-overs: the lease row is
			-- locked by this transaction until it commits.
			INSERT INTO public.tok_ledger (name, token) VALUES (name, t);
		END IF;
	END $$;
	CREATE TABLE public.tok_busy (name text, stuck bool NOT NULL DEFAULT false);
	CREATE FUNCTION public.tok_free(name text) RETURNS void LANGUAGE plpgsql AS $$
	DECLARE t int8 := dlock.dlock_acquire(name, '1 min');
	BEGIN
		IF t IS NULL THEN
			INSERT INTO public.tok_busy (name) VALUES (name);
		ELSIF NOT dlock.dlock_release(name, t) THEN
			INSERT INTO public.tok_busy (name, stuck) VALUES (name, true);
		END IF;
	END $$;
SQL
script=$(mktemp)
echo "\\set k random(1, 2000)" >"$script"
echo "SELECT public.tok_take('u' || :k);" >>"$script"
pgbench -n -U dlock_owner -c 6 -j 2 -T 40 -f "$script" dlock_sql_test >"$script.log" 2>&1 &
bench=$!
free=$(mktemp)
echo "\\set k random(1, 500)" >"$free"
echo "SELECT public.tok_free('f' || :client_id || '/' || :k);" >>"$free"
pgbench -n -U dlock_owner -c 2 -j 1 -T 40 -f "$free" dlock_sql_test >"$free.log" 2>&1 &
freebench=$!
for round in 1 2 3 4 5 6; do
	sleep 2
	"${psql[@]}" -c "SELECT dlock.dlock_rebase()" >/dev/null
	sleep 2
	"${psql[@]}" -c "SELECT setval('dlock.dlock_token_seq', (extract(epoch FROM clock_timestamp()) * 1e6)::int8 + 3600000000 * $round)" >/dev/null
	# Many jumps in a row, each its own transaction, while the clients draw.
	for i in $(seq 1 100); do echo "SELECT dlock.dlock_rebase();"; done | "${psql[@]}" >/dev/null
	if [ -n "${DLOCK_SQL_FAKETIME:-}" ]; then
		sleep 1
		echo '-3h' >"$DLOCK_SQL_FAKETIME"
		"${psql[@]}" -c "SELECT dlock.dlock_rebase()" >/dev/null
		sleep 1
		echo '+0' >"$DLOCK_SQL_FAKETIME"
	fi
done
wait $bench || { cat "$script.log"; exit 1; }
wait $freebench || { cat "$free.log"; exit 1; }
busy=$("${psql[@]}" -c "SELECT count(*) FROM public.tok_busy WHERE NOT stuck AND name NOT IN (SELECT name FROM public.tok_busy WHERE stuck)")
"${psql[@]}" -c "DROP FUNCTION public.tok_free(text)" -c "DROP TABLE public.tok_busy"
echo "token_unique: $busy busy answers for free names, out of $(grep -E '^number of transactions actually processed' "$free.log" | grep -oE '[0-9]+$') (for information)"
rm -f "$free" "$free.log"
grep -E "number of (transactions actually processed|failed)" "$script.log" || true
result=$("${psql[@]}" <<-'SQL'
	SELECT format('%s tokens, %s distinct, %s names, %s going down, %s jumps',
				  count(*), count(DISTINCT token), count(DISTINCT name),
				  (SELECT count(*) FROM (SELECT token < lag(token) OVER (PARTITION BY name ORDER BY n) AS down
										   FROM public.tok_ledger) d WHERE down),
				  (SELECT count(*) FROM dlock.dlock_epoch))
	  FROM public.tok_ledger;
	SELECT count(*) = count(DISTINCT token)
		   AND NOT EXISTS (SELECT FROM (SELECT token < lag(token) OVER (PARTITION BY name ORDER BY n) AS down
										  FROM public.tok_ledger) d WHERE down)
	  FROM public.tok_ledger;
	DROP FUNCTION public.tok_take(text);
	DROP TABLE public.tok_ledger;
SQL
)
rm -f "$script" "$script.log"
echo "token_unique: ${result%%$'\n'*}"
[ "${result##*$'\n'}" = t ] || { echo "token_unique: FAILED: a token repeated or went down" >&2; exit 1; }
echo "token_unique: ok"
