-- Copyright (c) 2026, the dlock developers
--
-- dlock_revoke in the SQL edition's counters (the C edition's
-- LeaseSetRevoked): revoking a held lease counts a release; revoking a
-- lease that expired without a release counts it lost (and the acquire
-- after it is no takeover and no second loss); revoking a released lease
-- inside its minimum hold, or a revoke that revokes nothing, counts
-- nothing.  The totals move as the rows do.  No token or time is printed.
\set SHOW_CONTEXT never
SET search_path = dlock, public;
CREATE FUNCTION public.revoke_stats_of(lock text)
RETURNS TABLE (acquisitions int8, releases int8, takeovers int8, lost int8)
LANGUAGE sql AS $$
SELECT s.acquisitions, s.releases, s.takeovers, s.lost FROM dlock.dlock_stats s WHERE s.name = lock
$$;
CREATE TABLE public.revoke_totals AS
	SELECT acquisitions, releases, takeovers, lost FROM dlock.dlock_stats_total;

-- Held: a release.
SET ROLE alice;
SELECT dlock_acquire('rs-held', '1 min') AS t1 \gset
RESET ROLE;
SELECT revoked_token = :t1 AS revoked FROM dlock_revoke('rs-held', wait => '0');
SELECT * FROM revoke_stats_of('rs-held');
-- Nothing left to revoke: not counted again.
SELECT revoked_token IS NULL AS nothing FROM dlock_revoke('rs-held', wait => '0');
SELECT * FROM revoke_stats_of('rs-held');

-- Expired without a release: lost, once.
SET ROLE alice;
SELECT dlock_acquire('rs-expired', '100 ms') AS t2 \gset
SELECT pg_sleep(0.2);
RESET ROLE;
SELECT revoked_token = :t2 AS revoked FROM dlock_revoke('rs-expired', wait => '0');
SELECT * FROM revoke_stats_of('rs-expired');
SET ROLE bob;
SELECT dlock_acquire('rs-expired', '1 min') IS NOT NULL AS acquired_after;
RESET ROLE;
SELECT * FROM revoke_stats_of('rs-expired');

-- Released inside its minimum hold: the revoke ends the hold, the release
-- was counted by dlock_release.
SET ROLE alice;
SELECT dlock_acquire('rs-hold', '1 min', min_hold => '30 s') AS t3 \gset
SELECT dlock_release('rs-hold', :t3) AS released;
RESET ROLE;
SELECT revoked_token = :t3 AS revoked FROM dlock_revoke('rs-hold', wait => '0');
SELECT * FROM revoke_stats_of('rs-hold');

-- The totals: four acquisitions, two releases, one lost.
SELECT t.acquisitions - b.acquisitions AS acquisitions, t.releases - b.releases AS releases,
	   t.takeovers - b.takeovers AS takeovers, t.lost - b.lost AS lost
  FROM dlock.dlock_stats_total t, public.revoke_totals b;

DROP TABLE public.revoke_totals;
DROP FUNCTION public.revoke_stats_of(text);
