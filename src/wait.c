/*-------------------------------------------------------------------------
 *
 * wait.c
 *		The advisory locks on lock names, and waiting for a busy lease.
 *
 * Each name maps to one advisory locktag of dlock's own key space (dlock.h):
 * shown in pg_locks as locktype 'advisory', classid and objid the high and
 * low 32 bits of a 64-bit hash of the name, objsubid DLOCK_LOCKTAG_NAME.
 * The SQL advisory lock functions only reach objsubid 1 and 2, so no role
 * can take these locks.  Two names may share a hash (at 64 bits, unlikely
 * below billions of names); they then only serialize their short state
 * changes, never the leases themselves.  All these locks are
 * transaction-level, so they work behind transaction-pooling connection
 * poolers and never outlive the transaction that took them.
 *
 * A waiting acquire holds none of these locks while it sleeps.  It polls
 * the lease row (a cheap index lookup, without locks) every
 * DLOCK_POLL_INTERVAL, and sleeps exactly until the expiry of a lease that
 * is held, so an expiry is noticed at once.  The sleep is on the process
 * latch, so query cancel, statement_timeout and termination interrupt it.
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/wait_event.h"

#include "compat.h"
#include "dlock.h"

/* How often a waiter looks at a busy lease, in microseconds. */
#define DLOCK_POLL_INTERVAL		4000

/*
 * The key of a lock name: 64 bits of its hash in fields 2 and 3, the
 * database in field 1, and DLOCK_LOCKTAG_NAME in field 4, a value no SQL
 * function reaches (see dlock.h).
 */
void
NameLockTag(text *name, LOCKTAG *tag)
{
	uint64		hash = DatumGetUInt64(hash_any_extended((unsigned char *) VARDATA_ANY(name),
														VARSIZE_ANY_EXHDR(name),
														0));

	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) (hash >> 32),
						 (uint32) hash, DLOCK_LOCKTAG_NAME);
}

/* The waiters' key of the name whose key is tag: the same hash, field 4 differs. */
void
NameWaiterTag(const LOCKTAG *tag, LOCKTAG *waiter_tag)
{
	SET_LOCKTAG_ADVISORY(*waiter_tag, tag->locktag_field1,
						 tag->locktag_field2, tag->locktag_field3,
						 DLOCK_LOCKTAG_WAITERS);
}

/* Is any acquire waiting for this name (or one with the same hash)? */
bool
NameHasWaiters(const LOCKTAG *waiter_tag)
{
	if (!NameLockTry(waiter_tag, DLOCK_LOCK_WAITERS_PROBE))
		return true;
	NameLockGiveBack(waiter_tag, DLOCK_LOCK_WAITERS_PROBE);
	return false;
}

/* Take the lock if nobody else holds a conflicting one; never wait. */
bool
NameLockTry(const LOCKTAG *tag, LOCKMODE mode)
{
	return LockAcquire(tag, mode, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

/*
 * Take the lock, waiting as long as it takes; lock_timeout, statement_timeout,
 * query cancel and the deadlock detector apply as for any lock.
 */
void
NameLockWait(const LOCKTAG *tag, LOCKMODE mode)
{
	(void) LockAcquire(tag, mode, false, false);
}

/*
 * Undo one NameLockTry or NameLockWait of this call.  The lock stays held if
 * this transaction had taken it before.
 */
void
NameLockGiveBack(const LOCKTAG *tag, LOCKMODE mode)
{
	if (!LockRelease(tag, mode, false))
		elog(ERROR, "dlock advisory lock was not held");
}

/*
 * Sleep until the lease may have changed: the next poll, the expiry of the
 * lease if it is held, or the deadline, whichever comes first.  Raises the
 * usual errors on query cancel, statement_timeout and lock_timeout (the
 * whole wait counts as one lock wait).
 */
void
WaitForLeaseChange(TimestampTz now, TimestampTz deadline,
				   const DlockLease *lease, TimestampTz wait_start)
{
	TimestampTz until = now + DLOCK_POLL_INTERVAL;
	long		timeout_ms;

	if (LeaseIsHeld(lease, now) && lease->expires_at < until)
		until = lease->expires_at;
	if (deadline < until)
		until = deadline;
	if (LockTimeout > 0 && wait_start + (int64) LockTimeout * 1000 < until)
		until = wait_start + (int64) LockTimeout * 1000;

	/* Round up: waking before an expiry would only mean another poll. */
	timeout_ms = (long) ((until - now + 999) / 1000);
	if (timeout_ms < 1)
		timeout_ms = 1;

	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 timeout_ms, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();

	if (LockTimeout > 0 &&
		wait_start + (int64) LockTimeout * 1000 < deadline &&
		GetCurrentTimestamp() >= wait_start + (int64) LockTimeout * 1000)
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("canceling statement due to lock timeout")));
}
