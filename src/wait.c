/*-------------------------------------------------------------------------
 *
 * wait.c
 *		The advisory locks on lock names, and waiting for a busy lease.
 *
 * Each name maps to advisory locktags of dlock's own key space (src/README,
 * "Locks"), built in locktag.c: shown in pg_locks as locktype 'advisory', classid and
 * objid the high and low 32 bits of the name's keyed 64-bit hash, objsubid
 * DLOCK_LOCKTAG_NAME for the name's lock and DLOCK_LOCKTAG_WAITERS for its
 * queue.  The SQL advisory lock functions only reach objsubid 1 and 2, so
 * no role can take these locks.  Two names may share a key by accident
 * (locktag.c); they then share a queue and serialize their short state
 * changes, never the leases themselves.  All these locks are
 * transaction-level, so they work behind transaction-pooling connection
 * poolers and never outlive the transaction that took them.
 *
 * Waiting.  A waiting acquire queues for the name's queue lock
 * (DLOCK_LOCK_QUEUE, ExclusiveLock) in the lock manager, which grants it
 * first come, first served and costs no CPU while it waits.  Only the
 * holder of the queue lock, the head, looks at the lease: it sleeps on its
 * latch until the lease's expiry or its own deadline, whichever comes
 * first, and a committed release wakes it (WaitWakeQueueAtCommit).  When a
 * lease looks free but its name's lock is held by a transaction that is
 * still open, the head waits for that lock in the lock manager, where the
 * deadlock detector sees it.
 *
 * Every lock-manager wait here is bounded by the acquire's deadline the way
 * lock_timeout bounds a lock wait: lock_timeout is set to the smaller of
 * the time left to the caller's own lock_timeout and the time left to the
 * deadline, in an internal subtransaction that catches the 55P03 when the
 * deadline was the binding one.  Every other error (the caller's own
 * lock_timeout, statement_timeout, query cancel, a deadlock) goes on
 * unchanged.  The caller's lock_timeout counts from the start of the whole
 * wait, as if the acquire waited for one lock.  The same bound applies to
 * every other wait of an acquire for another transaction: for a
 * transaction that deleted the lease row (WaitForXact), for the role's
 * quota lock, and for the locks on dlock's relations: the lease table, its
 * indexes (a REINDEX holds them), the counter and the epoch table
 * (WaitForRelationLockMode, WaitForIndexLocks); with wait = 0 each is only
 * tried, never waited for.
 *
 * A waiter whose client has gone takes no lease: it asks the kernel about
 * its client's connection after every sleep and lock-manager wait and just
 * before the acquiring transaction commits (WaitCheckClient), and from 15
 * on its latch sleep also ends when the client closes the connection.
 * Notifications for a session that LISTENs set its latch one by one; while
 * they are pending the head looks at the lease at most every
 * DLOCK_NOTIFY_LOOK_INTERVAL_MS (WaitOutNotifications).
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/async.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/relcache.h"
#include "utils/resowner.h"
#include "utils/wait_event.h"

#include "compat.h"
#include "dlock.h"

/* Queue locks to wake the head of when this transaction commits. */
static List *wake_at_commit = NIL;

/* Did this transaction take a lease after waiting?  Then check the client. */
static bool check_client_at_commit = false;

/*
 * Is anybody queued for this name (or one with the same hash)?  A probe of
 * the queue lock, taken and given back at once; never waits.
 */
bool
NameHasWaiters(const LOCKTAG *queue_tag)
{
	if (!NameLockTry(queue_tag, DLOCK_LOCK_QUEUE))
		return true;
	NameLockGiveBack(queue_tag, DLOCK_LOCK_QUEUE);
	return false;
}

/*
 * Which resource owner holds dlock's locks.  Every lock of dlock's (on a
 * name, its queue, a role's quota, the epoch) is taken under, and given back
 * from, the resource owner of the current (sub)transaction, never the
 * caller's CurrentResourceOwner: while a portal runs (a cursor's FETCH,
 * PL/pgSQL OPEN/FETCH, an extended-protocol portal) that is the portal's own
 * owner, and when a later fetch of the portal fails inside a subtransaction,
 * AtSubAbort_Portals (portalmem.c) makes the portal's owner a child of the
 * aborting subtransaction's, which then releases every lock in it: also the
 * locks that earlier, successful fetches took for the rest of the
 * transaction (a check lock, the state and hand-over locks of a lease this
 * transaction acquired).  The (sub)transaction's owner gives a lock up
 * exactly when the (sub)transaction ends: its commit hands it to the
 * parent, its abort releases it together with the writes it guarded, and
 * the transaction's end releases everything.
 *
 * An error raised while the owner is switched leaves CurrentResourceOwner
 * to the abort, which resets it (xact.c), as every catcher of errors does.
 */
static LockAcquireResult
XactLockAcquire(const LOCKTAG *tag, LOCKMODE mode, bool dontWait)
{
	ResourceOwner caller = CurrentResourceOwner;
	LockAcquireResult result;

	CurrentResourceOwner = CurTransactionResourceOwner;
	result = LockAcquire(tag, mode, false, dontWait);
	CurrentResourceOwner = caller;
	return result;
}

/*
 * Lock one of dlock's relations (the lease table, for a write) until the
 * (sub)transaction ends, under its resource owner as above, so that no
 * portal's failure gives the lock back while the row's address is relied on.
 */
void
XactLockRelation(Oid relid, LOCKMODE mode)
{
	ResourceOwner caller = CurrentResourceOwner;

	CurrentResourceOwner = CurTransactionResourceOwner;
	LockRelationOid(relid, mode);
	CurrentResourceOwner = caller;
}

/*
 * Take the lock if nobody else holds a conflicting one; never wait.  It is
 * held by the current (sub)transaction (see above).
 */
bool
NameLockTry(const LOCKTAG *tag, LOCKMODE mode)
{
	return XactLockAcquire(tag, mode, true) != LOCKACQUIRE_NOT_AVAIL;
}

/*
 * Take the lock, waiting as long as it takes; lock_timeout, statement_timeout,
 * query cancel and the deadlock detector apply as for any lock.  It is held
 * by the current (sub)transaction (see above).
 */
void
NameLockWait(const LOCKTAG *tag, LOCKMODE mode)
{
	(void) XactLockAcquire(tag, mode, false);
}

/*
 * Undo one NameLockTry, NameLockWait or WaitForNameLock of this call.  The
 * lock stays held if this transaction had taken it before.
 */
void
NameLockGiveBack(const LOCKTAG *tag, LOCKMODE mode)
{
	ResourceOwner caller = CurrentResourceOwner;
	bool		released;

	CurrentResourceOwner = CurTransactionResourceOwner;
	released = LockRelease(tag, mode, false);
	CurrentResourceOwner = caller;
	if (!released)
		elog(ERROR, "dlock advisory lock was not held");
}

/* The end of the caller's own lock_timeout, or 0 if it has none. */
static TimestampTz
CallerLockTimeoutEnd(const DlockWait *w)
{
	if (LockTimeout <= 0)
		return 0;
	return w->start + (int64) LockTimeout * 1000;
}

/* Raise the caller's own lock_timeout error, as the lock manager words it. */
static void
RaiseLockTimeout(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
			 errmsg("canceling statement due to lock timeout")));
}

/*
 * Milliseconds from now to until, rounded up (a wake-up before an expiry
 * would only mean another look), at least 1.
 */
static int
MillisecondsUntil(TimestampTz now, TimestampTz until)
{
	int64		ms = (until - now + 999) / 1000;

	if (ms < 1)
		return 1;
	if (ms > INT_MAX)
		return INT_MAX;
	return (int) ms;
}

/* The client's socket, if this backend has a client to send results to. */
static pgsocket
DlockClientSocket(void)
{
	if (MyProcPort == NULL || whereToSendOutput != DestRemote)
		return PGINVALID_SOCKET;
	return MyProcPort->sock;
}

/*
 * End this backend if its client has closed the connection, as PostgreSQL
 * does for client_connection_check_interval (ProcessInterrupts): FATAL
 * "connection to client lost" (08006), so the transaction rolls back and a
 * waiter whose client has gone never takes a lease for nobody.
 * pq_check_connection() asks the kernel without reading from the socket;
 * it may reset the latch, so it is called only after a sleep, never
 * between a look at the lease and the sleep that follows it.  A backend
 * without a client (a background worker) is never ended here.
 */
void
WaitCheckClient(void)
{
	if (DlockClientSocket() == PGINVALID_SOCKET || pq_check_connection())
		return;
	ClientConnectionLost = true;
	InterruptPending = true;
	CHECK_FOR_INTERRUPTS();
	/* Interrupts are held off: end it here, in the same words. */
	whereToSendOutput = DestNone;
	ereport(FATAL,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("connection to client lost")));
}

/* Check the client once more just before this transaction commits. */
void
WaitCheckClientAtCommit(void)
{
	check_client_at_commit = true;
}

/* What a bounded wait waits for in the lock manager (WaitBounded). */
typedef struct BoundedWait
{
	const LOCKTAG *tag;			/* a lock to take, or NULL */
	LOCKMODE	mode;
	VirtualTransactionId vxid;	/* with tag NULL: a transaction to wait for */
} BoundedWait;

/*
 * Wait in the lock manager no longer than the deadline of w, for what *bw
 * names: true once done, false when the deadline came first.  The caller's
 * own lock_timeout (counted from the start of w), statement_timeout, query
 * cancel and deadlocks raise their usual errors.
 *
 * The wait runs in an internal subtransaction with lock_timeout set to the
 * binding limit, as PL/pgSQL runs an exception block (pl_exec.c,
 * exec_stmt_block): on the deadline's 55P03 the subtransaction is rolled
 * back and the error dropped; any other error is raised again unchanged.  A
 * lock it got belongs, once the internal subtransaction commits, to the
 * resource owner of the calling (sub)transaction, like every lock of dlock's
 * (see XactLockAcquire), never to a portal's.
 */
static bool
WaitBounded(const BoundedWait *bw, const DlockWait *w)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz caller_end = CallerLockTimeoutEnd(w);
	bool		deadline_binds;
	int			timeout_ms;
	char		value[32];

	if (caller_end != 0 && caller_end <= w->deadline)
	{
		if (now >= caller_end)
			RaiseLockTimeout();
		deadline_binds = false;
		timeout_ms = MillisecondsUntil(now, caller_end);
	}
	else
	{
		if (now >= w->deadline)
			return false;
		deadline_binds = true;
		timeout_ms = MillisecondsUntil(now, w->deadline);
	}
	snprintf(value, sizeof(value), "%d", timeout_ms);

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);
	PG_TRY();
	{
		int			nestlevel = NewGUCNestLevel();

		(void) set_config_option("lock_timeout", value, PGC_USERSET,
								 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0,
								 false);
		if (bw->tag != NULL)
			(void) LockAcquire(bw->tag, bw->mode, false, false);
		else
			(void) VirtualXactLock(bw->vxid, true);

		/*
		 * The lock_timeout timer may fire just as the lock is granted: the
		 * lock manager then keeps the timeout's cancel pending (ProcSleep,
		 * keep_indicator), and it would be raised at the next interrupt
		 * check, outside this block, as a 55P03 the caller never asked for.
		 * Take it here, where the deadline's 55P03 is caught.
		 */
		CHECK_FOR_INTERRUPTS();
		AtEOXact_GUC(true, nestlevel);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
		WaitCheckClient();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
		if (deadline_binds && edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
		{
			FreeErrorData(edata);
			return false;
		}
		ReThrowError(edata);
	}
	PG_END_TRY();
	return true;
}

/*
 * Take the lock, waiting in the lock manager no longer than the deadline of
 * w (WaitBounded): true once held, false when the deadline came first.  The
 * request queues: while it waits, requests that conflict with it wait
 * behind it.
 */
bool
WaitForNameLock(const LOCKTAG *tag, LOCKMODE mode, const DlockWait *w)
{
	BoundedWait bw;

	bw.tag = tag;
	bw.mode = mode;
	return WaitBounded(&bw, w);
}

/*
 * Take the lock once no other transaction holds a conflicting one, waiting
 * no longer than the deadline of w, without queuing for it: it waits for
 * the transactions holding conflicting locks to end (GetLockConflicts and
 * VirtualXactLock, as WaitForLockers in lmgr.c does), then tries again, so
 * that nobody else's request for the name waits behind it meanwhile.  Each
 * transaction is waited for DLOCK_HOLDER_WAIT_SLICE_MS at a time, and the
 * lock tried again after it: a head waiter holds the state lock only for a
 * look, then waits on in its transaction.  True once held, false when the
 * deadline came first.  A stream of new holders may keep it waiting until
 * then.
 */
#define DLOCK_HOLDER_WAIT_SLICE_MS	100

/*
 * Wait for the transactions vxids (ending with an invalid one) to end, no
 * longer than DLOCK_HOLDER_WAIT_SLICE_MS and the deadline of w.
 */
static void
WaitForHoldersSlice(VirtualTransactionId *vxids, const DlockWait *w)
{
	DlockWait	slice = *w;
	BoundedWait bw;

	slice.deadline = Min(w->deadline,
						 TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													 DLOCK_HOLDER_WAIT_SLICE_MS));
	bw.tag = NULL;
	for (; VirtualTransactionIdIsValid(*vxids); vxids++)
	{
		bw.vxid = *vxids;
		if (!WaitBounded(&bw, &slice))
			break;
	}
	CHECK_FOR_INTERRUPTS();
}

bool
WaitForNameHolders(const LOCKTAG *tag, LOCKMODE mode, const DlockWait *w)
{
	return WaitForNameHoldersNoting(tag, mode, w, NULL);
}

/*
 * Add the pids of the backends running the transactions vxids (ending with
 * an invalid one) to *pids, once each.
 */
static void
NoteHolderPids(VirtualTransactionId *vxids, List **pids)
{
	for (; VirtualTransactionIdIsValid(*vxids); vxids++)
	{
		PGPROC	   *proc = DlockVxidGetProc(*vxids);

		if (proc != NULL && proc->pid != 0)
			*pids = list_append_unique_int(*pids, proc->pid);
	}
}

/*
 * WaitForNameHolders, adding to *pids (if pids is not NULL) the pid of
 * every backend whose transaction it waited for (dlock_revoke's
 * waited_for).
 */
bool
WaitForNameHoldersNoting(const LOCKTAG *tag, LOCKMODE mode,
						 const DlockWait *w, List **pids)
{
	while (!NameLockTry(tag, mode))
	{
		VirtualTransactionId *vxids;

		if (GetCurrentTimestamp() >= w->deadline)
			return false;
		vxids = GetLockConflicts(tag, mode, NULL);
		if (pids != NULL)
			NoteHolderPids(vxids, pids);
		WaitForHoldersSlice(vxids, w);
	}
	return true;
}

/*
 * Wait, as WaitForNameHolders does, until no other transaction holds a lock
 * on tag that conflicts with mode, but without taking it: true then, false
 * when the deadline of w came first.  The pids waited for are added to
 * *pids, if pids is not NULL.
 */
bool
WaitForNameFree(const LOCKTAG *tag, LOCKMODE mode, const DlockWait *w,
				List **pids)
{
	for (;;)
	{
		VirtualTransactionId *vxids = GetLockConflicts(tag, mode, NULL);

		if (!VirtualTransactionIdIsValid(*vxids))
			return true;
		if (GetCurrentTimestamp() >= w->deadline)
			return false;
		if (pids != NULL)
			NoteHolderPids(vxids, pids);
		WaitForHoldersSlice(vxids, w);
	}
}

/*
 * Wait for the transaction xid to end (as XactLockTableWait), no longer
 * than the deadline of w: true once it ended, false when the deadline came
 * first.  With the deadline already past, only a look: never a wait.
 */
bool
WaitForXact(TransactionId xid, const DlockWait *w)
{
	LOCKTAG		tag;

	SET_LOCKTAG_TRANSACTION(tag, xid);
	if (!NameLockTry(&tag, ShareLock) && !WaitForNameLock(&tag, ShareLock, w))
		return false;
	NameLockGiveBack(&tag, ShareLock);
	return true;
}

/*
 * Lock one of dlock's relations (the lease table, its indexes, the counter,
 * the epoch table) in mode, held by the current (sub)transaction (see
 * XactLockAcquire), waiting no longer than the deadline of w: false when
 * the deadline came first (with it past, when the lock is not free at
 * once).  With w NULL, as long as it takes.  Held, it lets the caller's own
 * opens of the relation in the same or a weaker mode pass a VACUUM FULL,
 * REINDEX or ALTER that queued meanwhile (the lock manager grants a request
 * of a holder ahead of the waiters that wait for it).  A lock for one look
 * is given back with RelationLockGiveBackMode; a lock for a write is kept
 * until the transaction ends.
 */
bool
WaitForRelationLockMode(Oid relid, LOCKMODE mode, const DlockWait *w)
{
	LOCKTAG		tag;

	SET_LOCKTAG_RELATION(tag, MyDatabaseId, relid);
	if (w == NULL)
		NameLockWait(&tag, mode);
	else if (!NameLockTry(&tag, mode) && !WaitForNameLock(&tag, mode, w))
		return false;

	/*
	 * As LockRelationOid does once it holds the lock: read the catalog
	 * changes committed before it was granted (a REINDEX CONCURRENTLY that
	 * replaced the primary key, say), so that the relation is opened as it
	 * is now even by a caller that opens it without locking it again
	 * (LeaseFetchLocked).
	 */
	AcceptInvalidationMessages();
	return true;
}

/* Give back one WaitForRelationLockMode. */
void
RelationLockGiveBackMode(Oid relid, LOCKMODE mode)
{
	LOCKTAG		tag;

	SET_LOCKTAG_RELATION(tag, MyDatabaseId, relid);
	NameLockGiveBack(&tag, mode);
}

/*
 * Take AccessShareLock on a relation of dlock's (the lease table) for the
 * length of one look, waiting no longer than the deadline of w, as
 * WaitForRelationLockMode.
 */
bool
WaitForRelationLock(Oid relid, const DlockWait *w)
{
	return WaitForRelationLockMode(relid, AccessShareLock, w);
}

/* Give back one WaitForRelationLock. */
void
RelationLockGiveBack(Oid relid)
{
	RelationLockGiveBackMode(relid, AccessShareLock);
}

/*
 * Before a write of rel (locked by the caller for it): take RowExclusiveLock
 * on each of its indexes, which the executor's index maintenance opens, as
 * WaitForRelationLockMode (bounded by w, kept until the transaction ends),
 * so that a REINDEX holding one of them is waited for no longer than the
 * deadline.  False when the deadline came first.
 */
bool
WaitForIndexLocks(Relation rel, const DlockWait *w)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	bool		granted = true;

	foreach(lc, indexes)
	{
		if (!WaitForRelationLockMode(lfirst_oid(lc), RowExclusiveLock, w))
		{
			granted = false;
			break;
		}
	}
	list_free(indexes);
	return granted;
}

/*
 * Join the name's queue: take its queue lock, first come first served.
 * True when this backend is the head, false when the deadline came first.
 * Without anybody queued it costs one lock, no subtransaction.
 */
bool
WaitQueueJoin(const LOCKTAG *queue_tag, const DlockWait *w)
{
	if (NameLockTry(queue_tag, DLOCK_LOCK_QUEUE))
		return true;
	return WaitForNameLock(queue_tag, DLOCK_LOCK_QUEUE, w);
}

/* Leave the queue; the lock manager grants the queue lock to the next one. */
void
WaitQueueLeave(const LOCKTAG *queue_tag)
{
	NameLockGiveBack(queue_tag, DLOCK_LOCK_QUEUE);
}

/*
 * The shortest time between two looks at the lease while notifications for
 * this session's LISTEN arrive: async.c sets the latch for each one, and
 * notifyInterruptPending stays set until the session is idle again.
 */
#define DLOCK_NOTIFY_LOOK_INTERVAL_MS	20

/*
 * A wake-up while notifications are pending may be one of them rather than
 * a release: sleep on, deaf to the latch, until DLOCK_NOTIFY_LOOK_INTERVAL_MS
 * after slept_at (or until until), so that a flood of notifications costs a
 * look per interval, not one per notification.  A release meanwhile is seen
 * by the next look; query cancel and statement_timeout are seen at the end
 * of the interval at the latest.
 */
static void
WaitOutNotifications(TimestampTz slept_at, TimestampTz until)
{
	TimestampTz end;
	TimestampTz now;

	end = Min(until, TimestampTzPlusMilliseconds(slept_at,
												 DLOCK_NOTIFY_LOOK_INTERVAL_MS));
	while (notifyInterruptPending && (now = GetCurrentTimestamp()) < end)
	{
		(void) WaitLatch(MyLatch, WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 MillisecondsUntil(now, end), PG_WAIT_EXTENSION);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * Sleep on the latch, as the head of the queue, until until (the lease's
 * expiry or the deadline), a committed release (WaitWakeQueueAtCommit) or an
 * interrupt.  The caller reset the latch before it last read the lease, so
 * a wake-up that came after that read ends this sleep at once.  Raises the
 * usual errors on query cancel and statement_timeout, and 55P03 when the
 * caller's own lock_timeout passes.
 */
void
WaitForLeaseChange(const DlockWait *w, TimestampTz until)
{
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz caller_end = CallerLockTimeoutEnd(w);
	int			events = WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH;

	if (caller_end != 0 && caller_end < until)
	{
		if (now >= caller_end)
			RaiseLockTimeout();
		until = caller_end;
	}
	if (DlockClientSocket() != PGINVALID_SOCKET)
		events |= DlockClientClosedEvent();
	if (now < until)
		(void) WaitLatchOrSocket(MyLatch, events, DlockClientSocket(),
								 MillisecondsUntil(now, until),
								 PG_WAIT_EXTENSION);
	CHECK_FOR_INTERRUPTS();
	WaitCheckClient();
	if (notifyInterruptPending)
		WaitOutNotifications(now, until);
	if (caller_end != 0 && caller_end < w->deadline &&
		GetCurrentTimestamp() >= caller_end)
		RaiseLockTimeout();
}

/*
 * Wake the head of the name's queue when this transaction commits: a lease
 * it freed may be taken.  Called with the name's state lock held, so the
 * head cannot decide on the lease before the commit anyway.
 */
void
WaitWakeQueueAtCommit(const LOCKTAG *tag)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(TopTransactionContext);
	LOCKTAG    *queue_tag = palloc(sizeof(LOCKTAG));

	NameQueueTag(tag, queue_tag);
	wake_at_commit = lappend(wake_at_commit, queue_tag);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * Set the latch of every holder of the queue lock: the head (and perhaps
 * a newcomer's brief probe).  A backend that exited meanwhile, or whose
 * PGPROC now serves another backend, gets a latch set it ignores: every
 * sleeper here tolerates spurious wake-ups.
 */
static void
WakeQueueHead(const LOCKTAG *queue_tag)
{
	VirtualTransactionId *vxids;

	vxids = GetLockConflicts(queue_tag, DLOCK_LOCK_QUEUE, NULL);
	for (; VirtualTransactionIdIsValid(*vxids); vxids++)
	{
		PGPROC	   *proc = DlockVxidGetProc(*vxids);

		if (proc != NULL)
			SetLatch(&proc->procLatch);
	}
}

/*
 * After commit (the new state is visible to everybody), wake the heads of
 * the queues whose leases this transaction freed.  A subtransaction rolled
 * back after a release leaves its wake-up here: one spurious wake-up.
 */
static void
WaitXactCallback(XactEvent event, void *arg)
{
	ListCell   *lc;

	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			if (check_client_at_commit)
			{
				check_client_at_commit = false;
				WaitCheckClient();
			}
			break;
		case XACT_EVENT_COMMIT:
			foreach(lc, wake_at_commit)
				WakeQueueHead((LOCKTAG *) lfirst(lc));
			wake_at_commit = NIL;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
			wake_at_commit = NIL;	/* its memory goes with the transaction */
			check_client_at_commit = false;
			break;
		default:
			break;
	}
}

/* Called once, from _PG_init. */
void
WaitInit(void)
{
	RegisterXactCallback(WaitXactCallback, NULL);
}
