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
PG_FUNCTION_INFO_V1(dlock_fence);
PG_FUNCTION_INFO_V1(dlock_rebase);
PG_FUNCTION_INFO_V1(dlock_resolve_holder);
PG_FUNCTION_INFO_V1(dlock_remaining);

/* Would an acquire by owner renew this (held) lease rather than wait? */
static bool
IsOwnerRenewal(const DlockLease *lease, const char *owner)
{
	return owner != NULL && lease->owner != NULL &&
		strcmp(owner, lease->owner) == 0 &&
		LeaseCallerActsForHolder(lease);
}

/*
 * Refuse a new lease to a role that holds dlock.max_leases_per_role.  The
 * role's quota lock, kept until the transaction ends, makes concurrent
 * acquires by one role count one after the other, each seeing the leases
 * the others committed.
 */
static void
CheckLeaseQuota(const DlockRelations *rels, TimestampTz now)
{
	LOCKTAG		tag;

	if (dlock_max_leases_per_role <= 0)
		return;
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, GetUserId(), 0,
						 DLOCK_LOCKTAG_QUOTA);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	if (LeaseCountHeldByRole(rels, GetUserId(), now,
							 dlock_max_leases_per_role) >=
		dlock_max_leases_per_role)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("role \"%s\" holds too many leases",
						GetUserNameFromId(GetUserId(), false)),
				 errdetail("The limit is %d leases per role.",
						   dlock_max_leases_per_role),
				 errhint("Release leases, or raise \"dlock.max_leases_per_role\".")));
}

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
 * Should a busy acquire sleep and look again?  Not past its deadline, and
 * not for a lease this very transaction holds: that cannot change hands
 * before the transaction ends, so waiting for it is waiting for ourselves.
 * Say busy at once then, unless it expires before the deadline.
 */
static bool
WorthWaiting(const DlockLease *lease, TimestampTz now, TimestampTz deadline)
{
	if (now >= deadline)
		return false;
	return !(LeaseIsHeld(lease, now) && lease->mine &&
			 lease->expires_at >= deadline);
}

/*
 * With DLOCK_LOCK_STATE on the name held, decide again on the state nobody
 * can change now: renew the owner's own lease (its token), hand a free lease
 * to the caller (a new token), or give the lock back (0).  *lease and *now
 * are left as decided on.
 */
static int64
AcquireUnderStateLock(FunctionCallInfo fcinfo, const DlockRelations *rels,
					  text *name, const LOCKTAG *tag, const char *owner,
					  DlockLease *lease, TimestampTz *now)
{
	int64		token;

	*now = GetCurrentTimestamp();
	LeaseFetchForUpdate(rels, name, lease);
	if (LeaseIsHeld(lease, *now) && IsOwnerRenewal(lease, owner))
	{
		LeaseSetExpiry(rels, name, lease, DlockExpiryArg(fcinfo, 1, *now));
		ForceDurableCommit();
		return lease->token;
	}
	if (!LeaseIsHeld(lease, *now) && NameLockTry(tag, DLOCK_LOCK_HANDOVER))
	{
		TimestampTz expires_at = DlockExpiryArg(fcinfo, 1, *now);

		/* Every check comes before the token is drawn. */
		CheckLeaseQuota(rels, *now);
		token = TokenDraw(rels, lease->found ? lease->token : 0);
		LeaseWriteNew(rels, name, lease, token, owner, *now, expires_at);
		return token;
	}
	NameLockGiveBack(tag, DLOCK_LOCK_STATE);
	return 0;
}

/*
 * dlock_acquire(name, ttl, wait, owner): a new token if the lease was free,
 * the same token if owner renews its own lease, NULL if still busy after
 * waiting up to wait.  Longer than most on purpose: the decisions of one
 * poll (renew, hand over, queue behind waiters, give up, sleep) share that
 * poll's state and locks, and read best in one place.
 */
Datum
dlock_acquire(PG_FUNCTION_ARGS)
{
	text	   *name = DlockNameArg(fcinfo, 0);
	TimestampTz start = GetCurrentTimestamp();
	int64		wait_usecs;
	char	   *owner;
	TimestampTz deadline;
	const DlockRelations *rels;
	LOCKTAG		tag;
	LOCKTAG		waiter_tag;
	bool		waiting = false;
	int64		token = 0;
	MemoryContext pollcxt;
	MemoryContext callcxt = CurrentMemoryContext;

	(void) DlockExpiryArg(fcinfo, 1, start);
	wait_usecs = DlockDurationArg(fcinfo, 2, "wait");
	owner = DlockOwnerArg(fcinfo, 3);
	PreventCommandIfReadOnly("dlock_acquire()");

	rels = DlockGetRelations(fcinfo);
	NameLockTag(name, &tag);
	NameWaiterTag(&tag, &waiter_tag);
	deadline = start + wait_usecs;

	/* What one round of the loop allocates is freed before the next. */
	pollcxt = AllocSetContextCreate(CurrentMemoryContext, "dlock_acquire",
									ALLOCSET_SMALL_SIZES);
	MemoryContextSwitchTo(pollcxt);

	for (;;)
	{
		TimestampTz now;
		DlockLease	lease;
		bool		renewal;

		MemoryContextReset(pollcxt);
		now = GetCurrentTimestamp();
		/* Looked up again: DROP EXTENSION may have come meanwhile. */
		rels = DlockGetRelations(fcinfo);

		/* The busy path: one index lookup, no lock, no transaction ID. */
		LeaseFetch(rels, name, &lease);
		renewal = LeaseIsHeld(&lease, now) && IsOwnerRenewal(&lease, owner);

		/*
		 * A free lease goes to those who already wait for it; only a caller
		 * that would not wait (wait = 0) may take it past them.
		 */
		if ((renewal ||
			 (!LeaseIsHeld(&lease, now) &&
			  (waiting || wait_usecs == 0 || !NameHasWaiters(&waiter_tag)))) &&
			NameLockTry(&tag, DLOCK_LOCK_STATE))
		{
			token = AcquireUnderStateLock(fcinfo, rels, name, &tag, owner,
										  &lease, &now);
			if (token != 0)
				break;
		}

		if (!WorthWaiting(&lease, now, deadline))
			break;
		if (!waiting)
		{
			/* Shared with other waiters; only a probe blocks it, briefly. */
			NameLockWait(&waiter_tag, DLOCK_LOCK_WAITING);
			waiting = true;
		}
		WaitForLeaseChange(now, deadline, &lease, start);
	}

	if (waiting)
		NameLockGiveBack(&waiter_tag, DLOCK_LOCK_WAITING);
	MemoryContextSwitchTo(callcxt);
	if (token == 0)
		PG_RETURN_NULL();			/* still busy after the wait */
	PG_RETURN_INT64(token);
}

/*
 * Lock name for a change by the holder of token, and fetch its lease.  False
 * (with the lock given back) unless token holds the lease now; 42501 if the
 * caller's role may not act for the role that acquired it.
 */
static bool
LockLeaseOfHolder(const DlockRelations *rels, text *name, int64 token,
				  const char *action, DlockLease *lease, TimestampTz *now)
{
	LOCKTAG		tag;

	NameLockTag(name, &tag);
	NameLockWait(&tag, DLOCK_LOCK_STATE);
	LeaseFetchForUpdate(rels, name, lease);
	*now = GetCurrentTimestamp();
	if (!LeaseIsHeld(lease, *now) || lease->token != token)
	{
		NameLockGiveBack(&tag, DLOCK_LOCK_STATE);
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

	PreventCommandIfReadOnly("dlock_release()");
	rels = DlockGetRelations(fcinfo);
	if (!LockLeaseOfHolder(rels, name, token, "release", &lease, &now))
		PG_RETURN_BOOL(false);
	LeaseSetReleased(rels, name, &lease, now);
	PG_RETURN_BOOL(true);
}

/* dlock_renew(name, token, ttl): true if token holds the lease, now longer. */
Datum
dlock_renew(PG_FUNCTION_ARGS)
{
	text	   *name = DlockNameArg(fcinfo, 0);
	int64		token = DlockTokenArg(fcinfo, 1);
	const DlockRelations *rels;
	DlockLease	lease;
	TimestampTz now;

	(void) DlockExpiryArg(fcinfo, 2, GetCurrentTimestamp());
	PreventCommandIfReadOnly("dlock_renew()");
	rels = DlockGetRelations(fcinfo);
	if (!LockLeaseOfHolder(rels, name, token, "renew", &lease, &now))
		PG_RETURN_BOOL(false);
	LeaseSetExpiry(rels, name, &lease, DlockExpiryArg(fcinfo, 2, now));
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

	PreventCommandDuringRecovery("dlock_check()");
	PG_RETURN_BOOL(FenceCheck(DlockGetRelations(fcinfo), name, token, false));
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

	PreventCommandDuringRecovery("dlock_assert()");
	(void) FenceCheck(DlockGetRelations(fcinfo), name, token, true);
	DeclareToken(name, token);
	PG_RETURN_VOID();
}

/*
 * dlock_cleanup(older_than, max_rows): delete up to max_rows rows of leases
 * that are not held and were released or expired more than older_than ago.
 * Returns how many were deleted.  Tokens come from the sequence, not from
 * the rows, so no future token is ever lowered by it.
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
	names = LeaseListIdle(rels, now, now - older_usecs, max_rows);
	foreach(lc, names)
	{
		text	   *name = (text *) lfirst(lc);
		LOCKTAG		tag;
		DlockLease	lease;
		TimestampTz last;

		NameLockTag(name, &tag);
		if (!NameLockTry(&tag, DLOCK_LOCK_HANDOVER))
			continue;			/* in use right now: leave it */
		now = GetCurrentTimestamp();
		LeaseFetchForUpdate(rels, name, &lease);
		last = lease.released ? lease.released_at : lease.expires_at;
		if (lease.found && !LeaseIsHeld(&lease, now) &&
			last < now - older_usecs)
		{
			LeaseDelete(rels, &lease);
			deleted++;
		}

		/*
		 * Given back even after a delete, so that a cleanup of any size holds
		 * one name lock at a time (1.0 kept one per row and ran out of shared
		 * memory).  An acquire of the name meanwhile finds the row being
		 * deleted and waits for this transaction (LeaseFetchForUpdate).
		 */
		NameLockGiveBack(&tag, DLOCK_LOCK_HANDOVER);
		CHECK_FOR_INTERRUPTS();
	}
	PG_RETURN_INT64(deleted);
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
