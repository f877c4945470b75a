/*-------------------------------------------------------------------------
 *
 * acquire.c
 *		The decisions of dlock_acquire: renew, hand over, say busy, or
 *		wait in the name's queue (the waiting itself is in wait.c).
 *
 * The order rule.  A caller with wait > 0 always joins the name's queue,
 * and the queue is served first come, first served by the lock manager.
 * A caller with wait = 0 never takes a free lease past a non-empty queue: it
 * gets NULL.  An owner renewal (an acquire by the owner of a lease it holds)
 * renews at once, queue or not.
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/acl.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "dlock.h"

/*
 * Did this acquire wait, for the queue, for the lease or for another
 * transaction?  Only then is it counted as a wait (stats.c): an acquire
 * with wait > 0 that finds the name free at once is none.
 */
static bool acquire_waited = false;

/* What an attempt under the name's state lock came to. */
typedef enum AcquireResult
{
	ACQUIRE_DONE,				/* renewed or handed over: a token */
	ACQUIRE_HELD,				/* somebody holds the lease */
	ACQUIRE_CHECKED,			/* free, but a check protects the old holder */
	ACQUIRE_TIMEOUT				/* the deadline came while waiting for another
								 * transaction */
} AcquireResult;

/* Would an acquire by owner renew this (held) lease rather than wait? */
static bool
IsOwnerRenewal(const DlockLease *lease, const char *owner)
{
	return owner != NULL && lease->owner != NULL &&
		strcmp(owner, lease->owner) == 0 &&
		LeaseCallerActsForHolder(lease);
}

/*
 * Must an acquire by owner wait for this lease: nobody may take the name
 * now (held, minimum hold, lock-delay) and it is not owner's to renew?
 */
static bool
IsBusyFor(const DlockLease *lease, TimestampTz now, const char *owner)
{
	return LeaseIsBusy(lease, now) &&
		!(LeaseIsHeld(lease, now) && IsOwnerRenewal(lease, owner));
}

/*
 * Refuse a new lease to a role that holds dlock.max_leases_per_role.  The
 * role's quota lock, kept until the transaction ends, makes concurrent
 * acquires by one role count one after the other, each seeing the leases
 * the others committed.  It is waited for no longer than the deadline of
 * w: false when the deadline came first (with wait = 0: whenever another
 * open acquire of the role holds it).
 */
static bool
CheckLeaseQuota(const DlockRelations *rels, TimestampTz now,
				const DlockWait *w)
{
	LOCKTAG		tag;

	if (dlock_max_leases_per_role <= 0)
		return true;
	RoleQuotaTag(GetUserId(), &tag);
	if (!NameLockTry(&tag, ExclusiveLock) &&
		!WaitForNameLock(&tag, ExclusiveLock, w))
		return false;
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
	return true;
}

/* Give back the quota lock CheckLeaseQuota took, when nothing was written. */
static void
LeaseQuotaGiveBack(void)
{
	LOCKTAG		tag;

	if (dlock_max_leases_per_role <= 0)
		return;
	RoleQuotaTag(GetUserId(), &tag);
	NameLockGiveBack(&tag, ExclusiveLock);
}

/*
 * With DLOCK_LOCK_STATE on the name held, decide again on the state nobody
 * can change now: renew the owner's own lease (its token), or hand a free
 * lease to the caller (a new token).  Otherwise the state lock is given
 * back.  *lease and *now are left as decided on.
 */
static AcquireResult
AcquireUnderStateLock(FunctionCallInfo fcinfo, const DlockRelations *rels,
					  text *name, const LOCKTAG *tag, const char *owner,
					  const DlockWait *w, DlockLease *lease, TimestampTz *now,
					  int64 *token)
{
	*now = GetCurrentTimestamp();
	if (!LeaseFetchForUpdateWithin(rels, name, lease, w))
	{
		NameLockGiveBack(tag, DLOCK_LOCK_STATE);
		return ACQUIRE_TIMEOUT;
	}
	/* A wait that ends with the lease is counted in its row (stats.c). */
	if (w->queued && acquire_waited)
		StatsNoteWait(&lease->stats, *now - w->start);
	if (LeaseIsHeld(lease, *now) && IsOwnerRenewal(lease, owner))
	{
		lease->stats.count[DLOCK_STATS_OWNER_RENEWALS]++;
		LeaseSetExpiry(rels, name, lease, DlockExpiryArg(fcinfo, 1, *now),
					   DlockLockDelayArg(fcinfo, 5));
		ForceDurableCommit();
		*token = lease->token;
		return ACQUIRE_DONE;
	}
	if (!LeaseIsBusy(lease, *now) && NameLockTry(tag, DLOCK_LOCK_HANDOVER))
	{
		TimestampTz expires_at = DlockExpiryArg(fcinfo, 1, *now);

		/* Every check comes before the token is drawn. */
		if (!CheckLeaseQuota(rels, *now, w))
		{
			NameLockGiveBack(tag, DLOCK_LOCK_HANDOVER);
			NameLockGiveBack(tag, DLOCK_LOCK_STATE);
			return ACQUIRE_TIMEOUT;
		}
		*token = TokenDraw(rels, lease->found ? lease->token : 0, w);
		if (*token == 0)
		{
			/* Nothing written: what this call took for it goes back. */
			LeaseQuotaGiveBack();
			NameLockGiveBack(tag, DLOCK_LOCK_HANDOVER);
			NameLockGiveBack(tag, DLOCK_LOCK_STATE);
			return ACQUIRE_TIMEOUT;
		}
		LeaseWriteNew(rels, name, lease, *token, owner, *now, expires_at,
					  DlockMinHoldArg(fcinfo, 4, 1),
					  DlockLockDelayArg(fcinfo, 5));
		UndeliveredNoteAcquire(fcinfo, name, *token);	/* undelivered.c */
		return ACQUIRE_DONE;
	}
	NameLockGiveBack(tag, DLOCK_LOCK_STATE);
	return LeaseIsBusy(lease, *now) ? ACQUIRE_HELD : ACQUIRE_CHECKED;
}

/*
 * AcquireUnderStateLock for the head of a queue: first look at the row, and
 * at the hand-over lock, without the table lock a write keeps until the
 * transaction ends, so that a head that must sleep again (the lease is held,
 * or an open check protects it) sleeps holding no lock on the lease table.
 */
static AcquireResult
AcquireAsHead(FunctionCallInfo fcinfo, const DlockRelations *rels,
			  text *name, const LOCKTAG *tag, const char *owner,
			  const DlockWait *w, DlockLease *lease, int64 *token)
{
	TimestampTz now = GetCurrentTimestamp();

	if (!LeaseFetchLocked(rels, name, lease, w))
	{
		NameLockGiveBack(tag, DLOCK_LOCK_STATE);
		return ACQUIRE_TIMEOUT;
	}
	if (IsBusyFor(lease, now, owner))
	{
		NameLockGiveBack(tag, DLOCK_LOCK_STATE);
		return ACQUIRE_HELD;
	}
	if (!LeaseIsHeld(lease, now))
	{
		if (!NameLockTry(tag, DLOCK_LOCK_HANDOVER))
		{
			NameLockGiveBack(tag, DLOCK_LOCK_STATE);
			return ACQUIRE_CHECKED;
		}
		/* AcquireUnderStateLock takes it again. */
		NameLockGiveBack(tag, DLOCK_LOCK_HANDOVER);
	}
	return AcquireUnderStateLock(fcinfo, rels, name, tag, owner, w, lease,
								 &now, token);
}

/*
 * Would waiting for this lease be waiting for ourselves?  A lease this very
 * transaction holds cannot change hands before the transaction ends: say
 * busy at once then, unless it expires before the deadline.
 */
static bool
WaitingForSelf(const DlockLease *lease, TimestampTz now, TimestampTz deadline)
{
	return LeaseIsHeld(lease, now) && lease->mine &&
		lease->expires_at >= deadline;
}

/*
 * The lease is free but other transactions hold its check protection
 * (pinners): wait for them to end, no longer than the deadline of w; once
 * the lease's release or expiry plus its pin grace has passed, end them
 * first (revoke.c, EndPinningBackends: cancel, then terminate).  The caller
 * looks at the lease again after it.  False when the deadline came first.
 * It waits for their transactions, not in the lock's queue, so that a
 * check, renew or release of the name answers at once meanwhile.
 */
static bool
WaitForPinners(text *name, const LOCKTAG *tag, const DlockLease *lease,
			   const DlockWait *w)
{
	DlockWait	until = *w;
	TimestampTz pin_end;

	if (LeasePinEnd(lease, &pin_end))
	{
		if (GetCurrentTimestamp() >= pin_end)
			(void) EndPinningBackends(tag, name, NULL, w->deadline);
		else
			until.deadline = Min(w->deadline, pin_end);
	}
	if (WaitForNameHolders(tag, DLOCK_LOCK_HANDOVER, &until))
	{
		NameLockGiveBack(tag, DLOCK_LOCK_HANDOVER);
		return true;
	}
	return GetCurrentTimestamp() < w->deadline; /* the grace ran out first */
}

/*
 * The lease looks free (or ours to renew) but another transaction holds
 * the name's state lock: wait for it to end, no longer than the deadline of
 * w.  A pinner that went on to renew or release the lease in its open
 * transaction holds the state lock too: with the lease no longer held, the
 * wait is bounded by its pin grace as WaitForPinners bounds the wait for
 * the hand-over lock, and once that has passed the pinners are ended
 * first.  True once the state lock is held; false when the deadline or the
 * pin grace came first (the caller looks again).  Like WaitForPinners it
 * does not queue for the lock.
 */
static bool
WaitForStateLock(text *name, const LOCKTAG *tag, const DlockLease *lease,
				 TimestampTz now, const DlockWait *w)
{
	DlockWait	until = *w;
	TimestampTz pin_end;

	/*
	 * No pin grace to keep: wait in the lock manager, where the deadlock
	 * detector sees the wait (two acquires in open transactions waiting for
	 * each other's names: 40P01, test/t/014_wait_queue.pl).
	 */
	if (LeaseIsHeld(lease, now) || !LeasePinEnd(lease, &pin_end))
		return WaitForNameLock(tag, DLOCK_LOCK_STATE, w);
	if (now >= pin_end)
		(void) EndPinningBackends(tag, name, NULL, w->deadline);
	else
		until.deadline = Min(w->deadline, pin_end);
	return WaitForNameHolders(tag, DLOCK_LOCK_STATE, &until);
}

/*
 * One look at the lease by the head of the queue, and what follows from it:
 * take it (true, *token set), or sleep until it may have changed (false).
 * *done is set when the wait is over without a lease.
 */
static bool
HeadTakesTurn(FunctionCallInfo fcinfo, text *name, const LOCKTAG *tag,
			  const char *owner, const DlockWait *w, int64 *token,
			  bool *done)
{
	const DlockRelations *rels;
	DlockLease	lease;
	TimestampTz now;
	AcquireResult result;

	/* Before the look: a wake-up from now on ends the next sleep at once. */
	ResetLatch(MyLatch);
	now = GetCurrentTimestamp();
	/* Looked up again: DROP EXTENSION may have come meanwhile. */
	rels = DlockGetRelationsWait(fcinfo, w);
	if (rels == NULL || !WaitForRelationLock(rels->lease_table, w))
	{
		*done = true;			/* the deadline came first */
		return false;
	}
	if (!LeaseFetchLocked(rels, name, &lease, w))
	{
		RelationLockGiveBack(rels->lease_table);
		*done = true;
		return false;
	}

	if (IsBusyFor(&lease, now, owner))
	{
		RelationLockGiveBack(rels->lease_table);
		if (now >= w->deadline || WaitingForSelf(&lease, now, w->deadline))
			*done = true;
		else
		{
			acquire_waited = true;
			WaitForLeaseChange(w, Min(LeaseAvailableAt(&lease), w->deadline));
		}
		return false;
	}

	/*
	 * Free (or ours to renew): the name's state lock decides.  If an open
	 * transaction holds it, wait for that transaction in the lock manager,
	 * where the deadlock detector sees the wait.
	 */
	if (!NameLockTry(tag, DLOCK_LOCK_STATE))
	{
		/* Waiting, it holds no lock on the lease table. */
		RelationLockGiveBack(rels->lease_table);
		acquire_waited = true;
		if (!WaitForStateLock(name, tag, &lease, now, w))
		{
			/* the deadline came first, or the grace: look again */
			*done = GetCurrentTimestamp() >= w->deadline;
			return false;
		}
		if (!WaitForRelationLock(rels->lease_table, w))
		{
			NameLockGiveBack(tag, DLOCK_LOCK_STATE);
			*done = true;
			return false;
		}
	}
	result = AcquireAsHead(fcinfo, rels, name, tag, owner, w, &lease, token);
	RelationLockGiveBack(rels->lease_table);
	if (result == ACQUIRE_DONE)
		return true;
	if (result == ACQUIRE_TIMEOUT)
		*done = true;
	else if (result == ACQUIRE_CHECKED)
	{
		acquire_waited = true;
		if (!WaitForPinners(name, tag, &lease, w))
			*done = true;
	}
	return false;
}

/*
 * Wait in the name's queue until this backend gets the lease or its
 * deadline passes: the token, or 0.  The queue lock is given back as soon
 * as the wait is over, so the next in line moves up at once (its head look
 * then waits for this transaction's state lock, if it took the lease).
 */
static int64
AcquireWaiting(FunctionCallInfo fcinfo, text *name, const LOCKTAG *tag,
			   const char *owner, const DlockWait *w)
{
	LOCKTAG		queue_tag;
	int64		token = 0;
	bool		done = false;
	MemoryContext callcxt = CurrentMemoryContext;
	MemoryContext turncxt;

	NameQueueTag(tag, &queue_tag);
	if (!NameLockTry(&queue_tag, DLOCK_LOCK_QUEUE))
	{
		acquire_waited = true;
		if (!WaitQueueJoin(&queue_tag, w))
			return 0;
	}

	/* What one turn allocates is freed before the next. */
	turncxt = AllocSetContextCreate(callcxt, "dlock_acquire",
									ALLOCSET_SMALL_SIZES);
	MemoryContextSwitchTo(turncxt);
	while (!done)
	{
		MemoryContextReset(turncxt);
		if (HeadTakesTurn(fcinfo, name, tag, owner, w, &token, &done))
			break;
	}
	MemoryContextSwitchTo(callcxt);
	MemoryContextDelete(turncxt);
	WaitQueueLeave(&queue_tag);
	if (token != 0)
		WaitCheckClientAtCommit();	/* did the client go meanwhile? */
	return token;
}

/*
 * The first look of an acquire, under the lease table lock its caller took:
 * true when it decided (*token, 0 for busy), false when the caller must
 * wait in the queue.
 */
static bool
AcquireAtOnce(FunctionCallInfo fcinfo, const DlockRelations *rels,
			  text *name, int64 wait_usecs, const char *owner, DlockWait *w,
			  int64 *token)
{
	LOCKTAG		tag;
	LOCKTAG		queue_tag;
	DlockLease	lease;

	if (!LeaseFetchLocked(rels, name, &lease, w))
	{
		*token = 0;				/* the deadline came first */
		return true;
	}
	if (LeaseIsBusy(&lease, w->start))
	{
		if (LeaseIsHeld(&lease, w->start) && IsOwnerRenewal(&lease, owner))
		{
			NameLockTag(name, &tag);
			if (NameLockTry(&tag, DLOCK_LOCK_STATE) &&
				AcquireUnderStateLock(fcinfo, rels, name, &tag, owner, w,
									  &lease, &w->start, token) == ACQUIRE_DONE)
				return true;
		}
		return wait_usecs == 0 || WaitingForSelf(&lease, w->start, w->deadline);
	}
	if (wait_usecs != 0)
		return false;
	/* A free lease goes to those who already wait for it. */
	NameLockTag(name, &tag);
	NameQueueTag(&tag, &queue_tag);
	if (NameHasWaiters(&queue_tag) ||
		!NameLockTry(&tag, DLOCK_LOCK_STATE) ||
		AcquireUnderStateLock(fcinfo, rels, name, &tag, owner, w,
							  &lease, &w->start, token) != ACQUIRE_DONE)
		*token = 0;
	return true;
}

/*
 * Acquire the lease called name for ttl (argument 1 of fcinfo), waiting up
 * to wait_usecs: a new token if it was free, the same token if owner renews
 * its own lease, 0 if still busy.  The busy path (held, wait = 0) is one
 * read of the lease row (by its remembered address, see lease.c): no dlock
 * lock, no memory context, no transaction ID.  The locks on dlock's
 * relations are waited for no longer than the deadline too (with wait = 0:
 * not at all): the lease table's (an operator's VACUUM FULL queued behind
 * another transaction), its indexes' (a REINDEX), the counter's and the
 * epoch table's (TokenDraw).
 */
int64
LeaseAcquire(FunctionCallInfo fcinfo, text *name, int64 wait_usecs,
			 const char *owner)
{
	const DlockRelations *rels;
	DlockWait	w;
	LOCKTAG		tag;
	int64		token = 0;
	bool		decided;

	w.start = GetCurrentTimestamp();
	w.deadline = w.start + wait_usecs;
	w.queued = false;
	acquire_waited = false;
	rels = DlockGetRelationsWait(fcinfo, &w);
	if (rels == NULL || !WaitForRelationLock(rels->lease_table, &w))
		return 0;
	decided = AcquireAtOnce(fcinfo, rels, name, wait_usecs, owner, &w, &token);
	RelationLockGiveBack(rels->lease_table);
	if (decided)
	{
		if (token == 0)
			StatsCountBusy(name);
		return token;
	}
	NameLockTag(name, &tag);
	w.queued = true;
	StatsWaitBegin(&w);			/* for dlock_waiters (stats.c) */
	token = AcquireWaiting(fcinfo, name, &tag, owner, &w);
	StatsWaitEnd();
	if (token == 0 && acquire_waited)
		StatsCountWaitTimeout(name, GetCurrentTimestamp() - w.start);
	else if (token == 0)
		StatsCountBusy(name);	/* it answered without waiting */
	return token;
}
