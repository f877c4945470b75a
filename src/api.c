/*-------------------------------------------------------------------------
 *
 * api.c
 *		The SQL-callable functions of dlock (except the dlock_fence trigger,
 *		which lives in fence.c, and dlock_rebase, in token.c).
 *
 * None of them is STRICT; every argument is checked before
 * anything is looked at or changed (args.c).
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "dlock.h"

PG_FUNCTION_INFO_V1(dlock_acquire);
PG_FUNCTION_INFO_V1(dlock_release);
PG_FUNCTION_INFO_V1(dlock_renew);
PG_FUNCTION_INFO_V1(dlock_check);
PG_FUNCTION_INFO_V1(dlock_assert);
PG_FUNCTION_INFO_V1(dlock_cleanup);
PG_FUNCTION_INFO_V1(dlock_import_check_name);
PG_FUNCTION_INFO_V1(dlock_fence);
PG_FUNCTION_INFO_V1(dlock_rebase);
PG_FUNCTION_INFO_V1(dlock_resolve_holder);
PG_FUNCTION_INFO_V1(dlock_remaining);

/*
 * Only the role that acquired a lease, its members and superusers may
 * release or renew it, even with the right token.
 */
static void
CheckHolderRole(const DlockLease *lease, text *name, const char *action)
{
	if (LeaseCallerActsForHolder(lease))
		return;
	DlockDenyHolder(lease, name, action);
}

/*
 * dlock_acquire(name, ttl, wait, owner, min_hold, lock_delay): a new token
 * if the lease was free, the same token if owner renews its own lease, NULL
 * if still busy after waiting up to wait (acquire.c decides, wait.c waits).
 * The 1.1 declaration has only the first four arguments (PG_NARGS()).
 */
Datum
dlock_acquire(PG_FUNCTION_ARGS)
{
	text	   *name = DlockNameArg(fcinfo, 0);
	int64		wait_usecs;
	char	   *owner;
	int64		token;

	(void) DlockExpiryArg(fcinfo, 1, GetCurrentTimestamp());
	wait_usecs = DlockDurationArg(fcinfo, 2, "wait");
	owner = DlockOwnerArg(fcinfo, 3);
	(void) DlockMinHoldArg(fcinfo, 4, 1);
	(void) DlockLockDelayArg(fcinfo, 5);
	PreventCommandIfReadOnly("dlock_acquire()");

	token = LeaseAcquire(fcinfo, name, wait_usecs, owner);
	if (token == 0)
		PG_RETURN_NULL();			/* still busy after the wait */
	PG_RETURN_INT64(token);
}

/*
 * Lock name for a change by the holder of token, and fetch its lease.  False
 * (with the lock given back) unless token holds the lease now; 42501 if the
 * caller's role may not act for the role that acquired it.
 *
 * A lease that the latest committed row shows held is first decided on from
 * that row, with no lock: held by another token, false; held by a role the
 * caller may not act for, 42501.  Nothing in flight can change either
 * answer (only the holder changes a held lease, and a hand-over needs it
 * released or expired), and the name's state lock, which an owner renewal
 * only tries (acquire.c), is never taken for another role's call.
 */
static bool
LockLeaseOfHolder(const DlockRelations *rels, text *name, int64 token,
				  const char *action, DlockLease *lease, TimestampTz *now,
				  LOCKTAG *tag)
{
	NameLockTag(name, tag);
	LeaseFetchSettled(rels, name, lease);
	*now = GetCurrentTimestamp();
	if (LeaseIsHeld(lease, *now))
	{
		if (lease->token != token)
			return false;
		CheckHolderRole(lease, name, action);
	}
	NameLockWait(tag, DLOCK_LOCK_STATE);
	LeaseFetchForUpdate(rels, name, lease);
	*now = GetCurrentTimestamp();
	if (!LeaseIsHeld(lease, *now) || lease->token != token)
	{
		NameLockGiveBack(tag, DLOCK_LOCK_STATE);
		return false;
	}
	CheckHolderRole(lease, name, action);
	return true;
}

/* dlock_release(name, token): true if token held the lease and freed it. */
Datum
dlock_release(PG_FUNCTION_ARGS)
{
	text	   *name = DlockNameArg(fcinfo, 0);
	int64		token = DlockTokenArg(fcinfo, 1);
	const DlockRelations *rels;
	DlockLease	lease;
	TimestampTz now;
	LOCKTAG		tag;

	PreventCommandIfReadOnly("dlock_release()");
	rels = DlockGetRelations(fcinfo);
	if (!LockLeaseOfHolder(rels, name, token, "release", &lease, &now, &tag))
		PG_RETURN_BOOL(false);
	LeaseSetReleased(rels, name, &lease, now);
	/* The head of the name's queue may take it once this commits. */
	WaitWakeQueueAtCommit(&tag);
	PG_RETURN_BOOL(true);
}

/*
 * dlock_renew(name, token, ttl, lock_delay): true if token holds the lease,
 * now longer, with lock_delay as its lock-delay.  The 1.1 declaration has
 * no lock_delay (PG_NARGS()): dlock.lock_delay then.
 */
Datum
dlock_renew(PG_FUNCTION_ARGS)
{
	text	   *name = DlockNameArg(fcinfo, 0);
	int64		token = DlockTokenArg(fcinfo, 1);
	const DlockRelations *rels;
	DlockLease	lease;
	TimestampTz now;
	LOCKTAG		tag;

	(void) DlockExpiryArg(fcinfo, 2, GetCurrentTimestamp());
	(void) DlockLockDelayArg(fcinfo, 3);
	PreventCommandIfReadOnly("dlock_renew()");
	rels = DlockGetRelations(fcinfo);
	/* A renewal wakes nobody: the queue's head sleeps until the expiry. */
	if (!LockLeaseOfHolder(rels, name, token, "renew", &lease, &now, &tag))
		PG_RETURN_BOOL(false);
	lease.stats.count[DLOCK_STATS_RENEWALS]++;
	LeaseSetExpiry(rels, name, &lease, DlockExpiryArg(fcinfo, 2, now),
				   DlockLockDelayArg(fcinfo, 3));
	/* A renewal lost in a crash or failover would end the lease early. */
	ForceDurableCommit();
	PG_RETURN_BOOL(true);
}

/* dlock_check(name, token): does token hold the lease now? */
Datum
dlock_check(PG_FUNCTION_ARGS)
{
	text	   *name = DlockNameArg(fcinfo, 0);
	int64		token = DlockTokenArg(fcinfo, 1);
	const DlockRelations *rels;

	PreventCommandDuringRecovery("dlock_check()");
	rels = DlockGetRelations(fcinfo);
	PG_RETURN_BOOL(FenceCheck(rels, name, token, GetUserId(), false));
}

/*
 * dlock_assert(name, token): dlock_check that raises LK001 instead of false;
 * on success it declares token as the transaction's token for name, which
 * the dlock_fence() trigger takes for writes that carry no new token.
 */
Datum
dlock_assert(PG_FUNCTION_ARGS)
{
	text	   *name = DlockNameArg(fcinfo, 0);
	int64		token = DlockTokenArg(fcinfo, 1);
	const DlockRelations *rels;

	PreventCommandDuringRecovery("dlock_assert()");
	rels = DlockGetRelations(fcinfo);
	(void) FenceCheck(rels, name, token, GetUserId(), true);
	DeclareToken(name, token);
	PG_RETURN_VOID();
}

/*
 * Delete the row of the idle lease called name, if it is still idle since
 * before cutoff, adding its name to *deleted and its counters to *rows
 * (StatsBaseForget then retires them): true if deleted.  Never
 * waits: a name in use (its hand-over lock taken), a row another
 * transaction is deleting (an overlapping cleanup), a lease table locked
 * by maintenance, are left for a later run (w has no time left).
 */
static bool
CleanupOne(const DlockRelations *rels, text *name, TimestampTz cutoff,
		   const DlockWait *w, List **deleted, List **rows)
{
	LOCKTAG		tag;
	DlockLease	lease;
	TimestampTz last;
	DlockLeaseStats *copy;
	bool		done = false;

	NameLockTag(name, &tag);
	if (!NameLockTry(&tag, DLOCK_LOCK_HANDOVER))
		return false;			/* in use right now: leave it */
	if (LeaseFetchForUpdateWithin(rels, name, &lease, w))
	{
		last = lease.released ? lease.released_at : lease.expires_at;
		/* not held, nor within a minimum hold or a lock-delay */
		if (lease.found && !LeaseIsBusy(&lease, GetCurrentTimestamp()) &&
			last < cutoff)
		{
			/* Its counters go to the totals; an expiry not released is lost. */
			if (!lease.released)
				lease.stats.count[DLOCK_STATS_LOST]++;
			copy = palloc(sizeof(DlockLeaseStats));
			*copy = lease.stats;
			*rows = lappend(*rows, copy);
			*deleted = lappend(*deleted, name);
			LeaseDelete(rels, &lease);
			StatsForgetName(name);
			done = true;
		}
	}

	/*
	 * Given back even after a delete, so that a cleanup of any size holds
	 * one name lock at a time (1.0 kept one per row and ran out of shared
	 * memory).  An acquire of the name meanwhile finds the row being deleted
	 * and waits for this transaction no longer than its own wait
	 * (LeaseFetchForUpdateWithin).
	 */
	NameLockGiveBack(&tag, DLOCK_LOCK_HANDOVER);
	return done;
}

/*
 * dlock_cleanup(older_than, max_rows): delete up to max_rows rows of leases
 * that are not held and were released or expired more than older_than ago.
 * Returns how many were deleted.  Tokens come from the sequence, not from
 * the rows, so no future token is ever lowered by it.  It waits for
 * nothing (CleanupOne); a cleanup that finds another one running (the
 * retired counters' lock taken) deletes nothing and returns 0.
 */
Datum
dlock_cleanup(PG_FUNCTION_ARGS)
{
	TimestampTz now = GetCurrentTimestamp();
	int64		older_usecs = DlockDurationArg(fcinfo, 0, "older_than");
	int32		max_rows;
	const DlockRelations *rels;
	List	   *names;
	ListCell   *lc;
	int64		deleted = 0;
	List	   *deleted_names = NIL;
	List	   *rows = NIL;
	DlockLeaseStats retired;
	DlockWait	no_wait;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"max_rows\" must not be null")));
	max_rows = PG_GETARG_INT32(1);
	if (max_rows < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"max_rows\" must be at least 1")));
	PreventCommandIfReadOnly("dlock_cleanup()");

	rels = DlockGetRelations(fcinfo);
	no_wait.start = no_wait.deadline = now;
	no_wait.queued = false;
	if (rels->has_stats &&
		!WaitForRelationLockMode(rels->stats_retired, ExclusiveLock, &no_wait))
		PG_RETURN_INT64(0);
	memset(&retired, 0, sizeof(retired));
	names = LeaseListIdle(rels, now, now - older_usecs, max_rows);
	foreach(lc, names)
	{
		if (CleanupOne(rels, (text *) lfirst(lc), now - older_usecs,
					   &no_wait, &deleted_names, &rows))
			deleted++;
		CHECK_FOR_INTERRUPTS();
	}
	if (deleted > 0)
	{
		/* Less what they counted before their resets; baselines go too. */
		StatsBaseForget(rels, deleted_names, rows, &retired);
		StatsRetire(rels, &retired, 0);
	}
	PG_RETURN_INT64(deleted);
}

/*
 * dlock_import_check_name(name): 55P03 unless no other transaction holds a
 * lock on name that a hand-over waits for: its check protection, or a
 * change of its lease in progress (src/README, "Importing").
 * dlock_import(state, replace => true) calls it for every row it is about
 * to replace, under its lock on the lease table, which keeps every row as
 * it is: none is held, and none can become held, so no check taken after
 * this one vouches for a row being replaced.  The hand-over lock is tried
 * as dlock_cleanup tries it, and given back at once, so that an import of
 * any size holds one name lock at a time.  Internal: revoked from PUBLIC.
 */
Datum
dlock_import_check_name(PG_FUNCTION_ARGS)
{
	text	   *name = DlockNameArg(fcinfo, 0);
	LOCKTAG		tag;
	List	   *pids;

	(void) DlockGetRelations(fcinfo);	/* loads the lock key */
	NameLockTag(name, &tag);
	if (NameLockTry(&tag, DLOCK_LOCK_HANDOVER))
	{
		NameLockGiveBack(&tag, DLOCK_LOCK_HANDOVER);
		PG_RETURN_VOID();
	}
	pids = NameCheckHolderPids(&tag);
	if (pids != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("could not import dlock leases"),
				 errdetail("Process %d holds the check protection of lease \"%s\", which the import would replace.",
						   linitial_int(pids), text_to_cstring(name)),
				 errhint("Wait for the transactions that hold it to end, or end them (dlock_revoke(name, force => true) does for an expired lease), then import again.")));
	pids = NamePinningPids(&tag);
	ereport(ERROR,
			(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
			 errmsg("could not import dlock leases"),
			 pids != NIL ?
			 errdetail("Process %d holds a lock on lease \"%s\" for a change or a check in progress, and the import would replace the lease.",
					   linitial_int(pids), text_to_cstring(name)) :
			 errdetail("Another transaction held a lock on lease \"%s\" for a change or a check in progress, and the import would replace the lease.",
					   text_to_cstring(name)),
			 errhint("Import again once that transaction has ended.")));
	PG_RETURN_VOID();			/* keep the compiler quiet */
}

/*
 * dlock_resolve_holder(role, role_oid, role_sysid): the holder role of a
 * lease row, by the rule of LeaseHolder, or NULL if it no longer exists.
 * The dlock_leases view uses it for the current role name, and to show a
 * token only to the roles that may use it.
 */
Datum
dlock_resolve_holder(PG_FUNCTION_ARGS)
{
	DlockLease	lease;
	Oid			holder;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	memset(&lease, 0, sizeof(lease));
	namestrcpy(&lease.role, NameStr(*PG_GETARG_NAME(0)));
	if (!PG_ARGISNULL(1) && !PG_ARGISNULL(2))
	{
		lease.role_oid = PG_GETARG_OID(1);
		lease.role_sysid = PG_GETARG_INT64(2);
	}
	holder = LeaseHolder(&lease);
	if (!OidIsValid(holder))
		PG_RETURN_NULL();
	PG_RETURN_OID(holder);
}

/*
 * dlock_remaining(name, token): the time left on the lease if token holds
 * it unexpired, NULL otherwise.  It only reads, and keeps no lock.
 */
Datum
dlock_remaining(PG_FUNCTION_ARGS)
{
	text	   *name = DlockNameArg(fcinfo, 0);
	int64		token = DlockTokenArg(fcinfo, 1);
	Interval   *remaining = (Interval *) palloc(sizeof(Interval));

	PreventCommandDuringRecovery("dlock_remaining()");
	if (!FenceRemaining(DlockGetRelations(fcinfo), name, token, remaining))
		PG_RETURN_NULL();
	PG_RETURN_INTERVAL_P(remaining);
}
