/*-------------------------------------------------------------------------
 *
 * revoke.c
 *		dlock_revoke: an operator ends a lease, and the transactions that
 *		hold its check protection (src/README, "Revoking").
 *
 * First the hand-over lock is taken, once every transaction that holds the
 * name's check protection (or changes the lease) has ended, waiting for
 * those transactions rather than queuing for the lock, so that the holder
 * renews, checks and writes meanwhile as if no revoke were waiting; then,
 * under the state lock too, the lease row is marked released, without its
 * minimum hold or lock-delay.
 * Once the revoke commits, the token is stale everywhere, and no
 * transaction that vouched for it is still open: what they wrote is
 * committed or rolled back.  If the wait runs out, without force: 55P03 and
 * nothing changed; with force, the transactions still holding the check
 * protection, and no others, are ended (EndPinningBackends) and waited
 * for.  A revoke whose lease is superseded meanwhile ends nobody and
 * revokes nothing.
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "access/htup_details.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "dlock.h"

PG_FUNCTION_INFO_V1(dlock_revoke);

/*
 * How long a cancelled backend may take to end its transaction before it
 * is terminated: a session idle in its transaction ignores a cancel.
 */
#define DLOCK_CANCEL_GRACE_MS	500

/*
 * The backends, other than this one, holding a lock on the name that a
 * hand-over waits for: the check protection (or a hand-over or state
 * change in progress).  Their pids, as a list of ints.
 */
List *
NamePinningPids(const LOCKTAG *tag)
{
	VirtualTransactionId *vxids;
	List	   *pids = NIL;

	vxids = GetLockConflicts(tag, DLOCK_LOCK_HANDOVER, NULL);
	for (; VirtualTransactionIdIsValid(*vxids); vxids++)
	{
		PGPROC	   *proc = DlockVxidGetProc(*vxids);

		if (proc != NULL && proc->pid != 0)
			pids = list_append_unique_int(pids, proc->pid);
	}
	return pids;
}

/*
 * May the current user end backend pid, by pg_signal_backend's rules?  A
 * superuser's backend, or one without a role (an autovacuum worker, a
 * background worker that connected without one), only for superusers
 * (from PostgreSQL 18 on, an autovacuum worker also for roles with the
 * privileges of pg_signal_autovacuum_worker: DlockMayEndRoleless); another
 * only for roles with the privileges of its role or of pg_signal_backend.
 * ERROR when not.
 */
static void
CheckMayEnd(int pid)
{
	PGPROC	   *proc = BackendPidGetProc(pid);
	Oid			role;

	if (proc == NULL)
		return;					/* gone already: nothing will be signalled */
	role = proc->roleId;
	if (!OidIsValid(role))
	{
		if (!DlockMayEndRoleless(proc))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to end process %d", pid),
					 errdetail("Only superusers may end a process that has no role, such as an autovacuum worker.")));
		return;
	}
	if (superuser_arg(role) && !superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to end process %d", pid),
				 errdetail("Only superusers may end a superuser's session.")));
	if (!has_privs_of_role(GetUserId(), role) &&
		!has_privs_of_role(GetUserId(), ROLE_PG_SIGNAL_BACKEND))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to end process %d", pid),
				 errdetail("Only roles with the privileges of the role whose process is being ended or with the privileges of the \"pg_signal_backend\" role may end it.")));
}

/* The pid of a backend found holding the check protection, and its transaction. */
typedef struct NamePinner
{
	int			pid;
	VirtualTransactionId vxid;	/* LockInstanceData.vxid when it was listed */
} NamePinner;

/*
 * Send sig to the backend of pinner, as pg_signal_backend does, if it still
 * runs the transaction it was listed in: the comparison and the kill are
 * done under ProcArrayLock, as SignalVirtualTransaction (procarray.c) does,
 * so that a backend whose listed transaction has ended since is left alone,
 * rather than its next statement cancelled or its session terminated.  A
 * transaction with an XID clears its virtual transaction ID under
 * ProcArrayLock (ProcArrayEndTransaction), so it is still running when the
 * signal is sent; one without an XID clears it without the lock, so it may
 * end between the comparison and the kill, a few instructions apart
 * (src/README, "Revoking").  True if the signal was sent.  *err is the
 * errno of a failed kill, 0 otherwise.
 */
static bool
SignalPinner(const NamePinner *pinner, int sig, int *err)
{
	PGPROC	   *proc;
	VirtualTransactionId now;
	bool		sent = false;

	*err = 0;
	LWLockAcquire(ProcArrayLock, LW_SHARED);
	proc = BackendPidGetProcWithLock(pinner->pid);
	if (proc != NULL)
	{
		GET_VXID_FROM_PGPROC(now, *proc);
		if (VirtualTransactionIdEquals(now, pinner->vxid))
		{
#ifdef HAVE_SETSID
			if (kill(-pinner->pid, sig) == 0)
				sent = true;
			else
#endif
			if (kill(pinner->pid, sig) == 0)
				sent = true;
			else
				*err = errno;
		}
	}
	LWLockRelease(ProcArrayLock);
	return sent;
}

/*
 * The backends, other than this one, holding the name's check protection
 * without its hand-over lock: the pinners of a lease no longer held.  A
 * transaction that handed the lease over and has not committed yet holds
 * the hand-over lock too, and is no pinner.  Nor is a backend still waiting
 * for a lock on the name (its waitLockMode in the lock data): a check that
 * holds the check protection and waits for the state lock, behind a
 * renewal or release in progress, has not answered yet and vouched for
 * nothing (FenceLeaseHeldBy); it is a pinner once it has answered true.  A
 * transaction whose earlier check vouched and that now waits for the state
 * lock again is left alone for that wait too: it waits for a state change
 * in progress, which the caller waits for anyway.  Each with the virtual
 * transaction it holds the lock in (NamePinner), as a list.  It reads the
 * lock manager's whole state (GetLockStatusData), which only a waiter past
 * a pin grace, a forced revoke and a refused import do.
 */
static List *
NameCheckHolders(const LOCKTAG *tag)
{
	LockData   *data = GetLockStatusData();
	List	   *pinners = NIL;
	int			i;

	for (i = 0; i < data->nelements; i++)
	{
		const LockInstanceData *inst = &data->locks[i];
		const LOCKTAG *t = &inst->locktag;
		NamePinner *pinner;

		if (t->locktag_type != tag->locktag_type ||
			t->locktag_lockmethodid != tag->locktag_lockmethodid ||
			t->locktag_field1 != tag->locktag_field1 ||
			t->locktag_field2 != tag->locktag_field2 ||
			t->locktag_field3 != tag->locktag_field3 ||
			t->locktag_field4 != tag->locktag_field4 ||
			inst->pid == MyProcPid || inst->pid == 0)
			continue;
		if ((inst->holdMask & LOCKBIT_ON(DLOCK_LOCK_CHECK)) == 0 ||
			(inst->holdMask & LOCKBIT_ON(DLOCK_LOCK_HANDOVER)) != 0 ||
			inst->waitLockMode != NoLock)
			continue;
		pinner = palloc(sizeof(NamePinner));
		pinner->pid = inst->pid;
		DlockLockInstanceVxid(pinner->vxid, inst);
		pinners = lappend(pinners, pinner);
	}
	return pinners;
}

/* NameCheckHolders, as a list of pids (ints). */
List *
NameCheckHolderPids(const LOCKTAG *tag)
{
	List	   *pids = NIL;
	ListCell   *lc;

	foreach(lc, NameCheckHolders(tag))
		pids = list_append_unique_int(pids, ((NamePinner *) lfirst(lc))->pid);
	return pids;
}

/*
 * What a revoke revokes: the lease on name held by token (any, with
 * any_token).  gone is set once the latest committed lease is no longer
 * one to revoke (RevokeApplies): another token's, released, or free.
 * What it did, for its result and its log line: the pids of every
 * transaction it waited for (waited: also those that took the check
 * protection during the wait), of every backend it cancelled or terminated
 * (ended), and of those it terminated.
 */
struct RevokeTarget
{
	const DlockRelations *rels;
	text	   *name;
	bool		any_token;
	int64		token;
	bool		gone;
	List	   *waited;
	List	   *ended;
	List	   *terminated;
};

static bool RevokeApplies(const DlockLease *lease, bool any_token,
						  int64 token, TimestampTz now);

/* Is the lease of *target still one to revoke?  Else set gone. */
static bool
RevokeTargetHolds(RevokeTarget *target)
{
	DlockLease	lease;

	LeaseFetchSettled(target->rels, target->name, &lease);
	if (!RevokeApplies(&lease, target->any_token, target->token,
					   GetCurrentTimestamp()))
		target->gone = true;
	return !target->gone;
}

/*
 * The backends to end: those holding the check protection without the
 * hand-over lock (NameCheckHolders), for a revoke as for a waiter past a
 * pin grace, each with the transaction it was seen in.  A hand-over, a
 * renewal, a release or a reset in progress holds no check protection and
 * is never ended, nor is a backend whose transaction has ended already
 * (an invalid virtual transaction ID: it is only giving its locks back).
 * For a revoke, NIL once its lease is no longer one to revoke: read after
 * the list, so that none is a check of a newer lease (a check of a new
 * token comes after its acquire committed, which the read then sees).
 */
static List *
PinnersToEnd(const LOCKTAG *tag, RevokeTarget *revoke)
{
	List	   *pinners = NIL;
	ListCell   *lc;

	foreach(lc, NameCheckHolders(tag))
	{
		NamePinner *pinner = lfirst(lc);

		if (VirtualTransactionIdIsValid(pinner->vxid))
			pinners = lappend(pinners, pinner);
	}
	if (revoke != NULL && pinners != NIL && !RevokeTargetHolds(revoke))
		return NIL;
	return pinners;
}

/*
 * Check each of pinners against pg_signal_backend's rules (CheckMayEnd), for a
 * revoke: ERROR if the caller may not end one.
 */
static void
CheckMayEndPinners(List *pinners)
{
	ListCell   *lc;

	foreach(lc, pinners)
		CheckMayEnd(((NamePinner *) lfirst(lc))->pid);
}

/*
 * Send sig (SIGINT: cancel, else terminate) to each backend of pinners that
 * still runs the transaction it was listed in (SignalPinner), and log each
 * one signalled, after the signal.  A waiter past a pin grace (for_revoke
 * false) ends them without the privilege rule (the grace is the
 * superuser's bound), except a backend without a role, such as an
 * autovacuum worker, which it ends only if pg_signal_backend would let it
 * (DlockMayEndRoleless), and logs with LOG_SERVER_ONLY: its client may not
 * see the pid and role of another role's pinner (dlock_waiters hides
 * them).  A forced revoke's lines may reach its caller, who is shown what
 * it ended anyway.  The pids signalled, as a list of ints.
 */
static List *
SignalPinners(List *pinners, text *name, int sig, bool for_revoke)
{
	int			level = for_revoke ? LOG : LOG_SERVER_ONLY;
	List	   *sent = NIL;
	ListCell   *lc;

	foreach(lc, pinners)
	{
		const NamePinner *pinner = lfirst(lc);
		PGPROC	   *proc = BackendPidGetProc(pinner->pid);
		char	   *rolname = NULL;
		int			err;

		if (proc == NULL || list_member_int(sent, pinner->pid))
			continue;			/* gone already */
		if (OidIsValid(proc->roleId))
			rolname = GetUserNameFromId(proc->roleId, true);
		else if (!for_revoke && !DlockMayEndRoleless(proc))
			continue;			/* waited for until the deadline */
		if (!SignalPinner(pinner, sig, &err))
		{
			if (err != 0)
			{
				errno = err;
				ereport(for_revoke ? WARNING : LOG_SERVER_ONLY,
						(errmsg("could not send signal to process %d: %m",
								pinner->pid)));
			}
			continue;
		}
		sent = lappend_int(sent, pinner->pid);
		if (sig != SIGINT)
			ereport(level,
					(errmsg("dlock: terminating process %d, which still holds lease \"%s\" back",
							pinner->pid, text_to_cstring(name))));
		else if (rolname != NULL)
			ereport(level,
					(errmsg("dlock: cancelling process %d of role \"%s\", which holds lease \"%s\" back",
							pinner->pid, rolname, text_to_cstring(name))));
		else
			ereport(level,
					(errmsg("dlock: cancelling process %d, which holds lease \"%s\" back",
							pinner->pid, text_to_cstring(name))));
	}
	return sent;
}

/*
 * End the transactions holding the name's check protection without its
 * hand-over lock (PinnersToEnd): for a revoke (revoke not NULL) each checked
 * against pg_signal_backend's rules first, and none once the revoke's lease
 * is no longer one to revoke; for a waiting acquire past a pin grace
 * without the privilege rule, but for backends without a role
 * (SignalPinners).  Cancel each (a running statement ends, and its
 * transaction rolls back), and terminate each that still holds it
 * DLOCK_CANCEL_GRACE_MS later or at deadline, whichever comes first (a
 * session idle in its transaction ignores a cancel), as hot standby does
 * for a recovery conflict.  A backend that took the check protection
 * during the cancel wait is terminated too, privilege-checked the same
 * way.  A signal goes only to a backend that still runs the transaction it
 * was listed in (SignalPinner), and each one sent is logged.  The pids
 * signalled; for a revoke, the pids waited for and terminated are also
 * added to its lists.
 */
List *
EndPinningBackends(const LOCKTAG *tag, text *name, RevokeTarget *revoke,
				   TimestampTz deadline)
{
	List	   *pinners = PinnersToEnd(tag, revoke);
	List	   *ended;
	List	   *terminated;
	TimestampTz grace_end;

	if (pinners == NIL)
		return NIL;
	if (revoke != NULL)
		CheckMayEndPinners(pinners);
	ended = SignalPinners(pinners, name, SIGINT, revoke != NULL);
	grace_end = Min(deadline,
					TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
												DLOCK_CANCEL_GRACE_MS));
	while (GetCurrentTimestamp() < grace_end)
	{
		DlockWait	w;

		/* In the lock manager, for the holders' transactions to end. */
		w.start = GetCurrentTimestamp();
		w.deadline = Min(grace_end, TimestampTzPlusMilliseconds(w.start, 50));
		w.queued = false;
		(void) WaitForNameFree(tag, DLOCK_LOCK_HANDOVER, &w,
							   revoke != NULL ? &revoke->waited : NULL);
		if (PinnersToEnd(tag, revoke) == NIL)
			return ended;
	}
	pinners = PinnersToEnd(tag, revoke);
	if (revoke != NULL)
		CheckMayEndPinners(pinners);
	terminated = SignalPinners(pinners, name, SIGTERM, revoke != NULL);
	if (revoke != NULL)
		revoke->terminated = list_concat_unique_int(revoke->terminated,
													terminated);
	return list_concat_unique_int(ended, terminated);
}

/* A list of pids as an int4[]. */
static Datum
PidArray(List *pids)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(list_length(pids), 1));
	ListCell   *lc;
	int			n = 0;

	foreach(lc, pids)
		elems[n++] = Int32GetDatum(lfirst_int(lc));
	return PointerGetDatum(construct_array(elems, n, INT4OID, sizeof(int32),
										   true, TYPALIGN_INT));
}

/* The result record of dlock_revoke. */
static Datum
RevokeResult(FunctionCallInfo fcinfo, int64 token, List *waited, List *ended)
{
	TupleDesc	desc;
	Datum		values[3];
	bool		nulls[3] = {token == 0, false, false};

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "dlock_revoke must return a record");
	desc = BlessTupleDesc(desc);
	values[0] = Int64GetDatum(token);
	values[1] = PidArray(waited);
	values[2] = PidArray(ended);
	return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}

/*
 * Terminate the backends that hold the check protection now and were not
 * terminated yet (PinnersToEnd, CheckMayEnd): after the round of ending, a
 * check that vouched since (a newcomer, or a check that was still waiting
 * for the state lock during the round) is ended as one that took the
 * protection during the cancel wait is.  True if it signalled any.
 */
static bool
RevokeEndNewPinners(const LOCKTAG *tag, RevokeTarget *target)
{
	List	   *fresh = NIL;
	List	   *sent;
	ListCell   *lc;

	foreach(lc, PinnersToEnd(tag, target))
		if (!list_member_int(target->terminated,
							 ((NamePinner *) lfirst(lc))->pid))
			fresh = lappend(fresh, lfirst(lc));
	if (fresh == NIL)
		return false;
	CheckMayEndPinners(fresh);
	sent = SignalPinners(fresh, target->name, SIGTERM, true);
	target->terminated = list_concat_unique_int(target->terminated, sent);
	target->ended = list_concat_unique_int(target->ended, sent);
	return sent != NIL;
}

/*
 * Take the name's hand-over lock, waiting until deadline for every other
 * transaction holding a lock on the name, without queuing for the lock
 * (WaitForNameHoldersNoting, each pid waited for added to target->waited):
 * a queued request would make the holder's renewals, checks and fenced
 * writes wait behind it, and a revoke that then fails would have cost the
 * holder its lease.  It looks at the lease again after each
 * DLOCK_REVOKE_LOOK_MS: false (the lock not taken) once it is no longer one
 * to revoke (target->gone) or at the deadline.  With end_new (a forced
 * revoke after its round of ending), each look also terminates the new
 * holders of the check protection (RevokeEndNewPinners), and the deadline
 * moves to at least DLOCK_CANCEL_GRACE_MS after that, for them to exit,
 * but never more than DLOCK_CANCEL_GRACE_MS past the deadline given.
 */
#define DLOCK_REVOKE_LOOK_MS	100

static bool
RevokeWaitForLock(const LOCKTAG *tag, RevokeTarget *target,
				  TimestampTz deadline, bool end_new)
{
	DlockWait	w;
	TimestampTz last = TimestampTzPlusMilliseconds(deadline,
												   DLOCK_CANCEL_GRACE_MS);

	w.start = GetCurrentTimestamp();
	w.queued = false;
	for (;;)
	{
		w.deadline = Min(deadline,
						 TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													 DLOCK_REVOKE_LOOK_MS));
		if (WaitForNameHoldersNoting(tag, DLOCK_LOCK_HANDOVER, &w,
									 &target->waited))
			return true;
		if (!RevokeTargetHolds(target))
			return false;
		if (end_new && RevokeEndNewPinners(tag, target))
			deadline = Min(last,
						   Max(deadline,
							   TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														   DLOCK_CANCEL_GRACE_MS)));
		else if (GetCurrentTimestamp() >= deadline)
			return false;
	}
}

/*
 * Is the lease of *target free (not held, nor in a minimum hold or a
 * lock-delay)?  Then, with no check protection left to end, what holds the
 * name is a hand-over (or a cleanup) in progress: there is nothing to
 * revoke, and gone is set.
 */
static bool
RevokeLeaseFree(RevokeTarget *target)
{
	DlockLease	lease;
	TimestampTz now = GetCurrentTimestamp();

	LeaseFetchSettled(target->rels, target->name, &lease);
	if (lease.found && (LeaseIsHeld(&lease, now) || LeaseIsBusy(&lease, now)))
		return false;
	target->gone = true;
	return true;
}

/*
 * A forced revoke's wait ran out: 55P03, saying what still holds the lease
 * back.  A backend it terminated that is still there (it had not noticed
 * the signal yet), a check that vouched at the very end of the wait, or
 * else a transaction that changes the lease (a hand-over, renewal, release
 * or reset in progress, or a check waiting behind one), which force never
 * ends.
 */
static void
RevokeGiveUp(const LOCKTAG *tag, RevokeTarget *target)
{
	List	   *left = NameCheckHolderPids(tag);
	ListCell   *lc;
	char	   *name = text_to_cstring(target->name);

	foreach(lc, left)
		if (list_member_int(target->terminated, lfirst_int(lc)))
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("could not revoke lease \"%s\"", name),
					 errdetail("Process %d, which was terminated, still held its check protection when the wait ran out.",
							   lfirst_int(lc))));
	if (left != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("could not revoke lease \"%s\"", name),
				 errdetail("Process %d took its check protection as the wait ran out.",
						   linitial_int(left))));
	ereport(ERROR,
			(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
			 errmsg("could not revoke lease \"%s\"", name),
			 errdetail("A transaction that changes the lease (an acquire, renewal or release in progress) is still open; force ends only the transactions that hold its check protection.")));
}

/*
 * Take the hand-over lock for the revoke (RevokeWaitForLock), waiting up
 * to wait_usecs.  With force, then end the transactions that still hold
 * the lease's check protection (EndPinningBackends), and no others, and
 * wait another wait_usecs, plus DLOCK_CANCEL_GRACE_MS if it ended any (a
 * terminated backend takes a moment to exit), terminating any that takes
 * the check protection meanwhile: a hand-over, a renewal or a release in
 * progress, which takes no check protection, is waited for, unless the
 * lease is free (RevokeLeaseFree).  55P03 when the wait runs out
 * (RevokeGiveUp); false, the lock not taken, once the lease is no longer
 * one to revoke.  The lock is kept until the transaction ends, so no new
 * check vouches for the revoked token before the revoke commits.
 */
static bool
RevokeWaitForPinners(const LOCKTAG *tag, RevokeTarget *target,
					 int64 wait_usecs, bool force)
{
	TimestampTz deadline;

	target->waited = NamePinningPids(tag);
	if (RevokeWaitForLock(tag, target, GetCurrentTimestamp() + wait_usecs,
						  false))
		return true;
	if (target->gone)
		return false;
	if (!force)
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("could not revoke lease \"%s\"",
						text_to_cstring(target->name)),
				 errdetail("Other transactions still hold its check protection or change it after the wait."),
				 errhint("Wait longer, or pass force => true to end those that hold its check protection.")));
	target->ended = EndPinningBackends(tag, target->name, target, DT_NOEND);
	if (target->gone || (target->ended == NIL && RevokeLeaseFree(target)))
		return false;
	deadline = GetCurrentTimestamp() + wait_usecs;
	if (target->ended != NIL)
		deadline = TimestampTzPlusMilliseconds(deadline, DLOCK_CANCEL_GRACE_MS);
	if (RevokeWaitForLock(tag, target, deadline, true))
		return true;
	if (target->gone || RevokeLeaseFree(target))
		return false;
	RevokeGiveUp(tag, target);
	return false;				/* keep the compiler quiet */
}

/* The pids of a list, for a log line: "1, 2, 3". */
static char *
PidListString(List *pids)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, pids)
		appendStringInfo(&buf, "%s%d", buf.len > 0 ? ", " : "",
						 lfirst_int(lc));
	return buf.data;
}

/*
 * Is there something to revoke in *lease: a row of the given token (any,
 * with any_token) that is not released, or is released but inside its
 * minimum hold?
 */
static bool
RevokeApplies(const DlockLease *lease, bool any_token, int64 token,
			  TimestampTz now)
{
	return lease->found && (any_token || lease->token == token) &&
		(!lease->released || LeaseIsBusy(lease, now));
}

/*
 * dlock_revoke(name, token, wait, force): end the lease on name (held by
 * token, if given), skipping its minimum hold and lock-delay, once every
 * transaction holding its check protection has ended.  revoked_token is
 * NULL when nothing was revoked (no lease, another token, or already free).
 */
Datum
dlock_revoke(PG_FUNCTION_ARGS)
{
	text	   *name = DlockNameArg(fcinfo, 0);
	bool		any_token = PG_ARGISNULL(1);
	int64		token = any_token ? 0 : PG_GETARG_INT64(1);
	int64		wait_usecs = DlockDurationArg(fcinfo, 2, "wait");
	bool		force;
	const DlockRelations *rels;
	DlockLease	lease;
	LOCKTAG		tag;
	RevokeTarget target;
	TimestampTz now;

	if (PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"force\" must not be null")));
	force = PG_GETARG_BOOL(3);
	PreventCommandIfReadOnly("dlock_revoke()");
	rels = DlockGetRelations(fcinfo);
	NameLockTag(name, &tag);
	LeaseFetchSettled(rels, name, &lease);
	if (!RevokeApplies(&lease, any_token, token, GetCurrentTimestamp()))
		return RevokeResult(fcinfo, 0, NIL, NIL);

	/*
	 * Without a token, the lease to end is the one seen now: a later lease
	 * (a waiter let in once the pinners this revoke ends are gone) is
	 * another token's, ended by nobody (attack5 F7).
	 */
	any_token = false;
	token = lease.token;
	target.rels = rels;
	target.name = name;
	target.any_token = any_token;
	target.token = token;
	target.gone = false;
	target.waited = target.ended = target.terminated = NIL;
	if (!RevokeWaitForPinners(&tag, &target, wait_usecs, force))
		return RevokeResult(fcinfo, 0, target.waited, target.ended);
	/* Holding the hand-over lock, nobody else holds the state lock. */
	NameLockWait(&tag, DLOCK_LOCK_STATE);
	LeaseFetchForUpdate(rels, name, &lease);
	now = GetCurrentTimestamp();
	if (!RevokeApplies(&lease, any_token, token, now))
	{
		NameLockGiveBack(&tag, DLOCK_LOCK_STATE);
		NameLockGiveBack(&tag, DLOCK_LOCK_HANDOVER);
		return RevokeResult(fcinfo, 0, target.waited, target.ended);
	}
	LeaseSetRevoked(rels, name, &lease, now);
	WaitWakeQueueAtCommit(&tag);
	ForceDurableCommit();
	ereport(LOG,
			(errmsg("dlock: lease \"%s\" with token %lld revoked by role \"%s\"",
					text_to_cstring(name), (long long) lease.token,
					GetUserNameFromId(GetUserId(), false)),
			 errdetail_internal("Waited for processes: %s; ended processes: %s.",
								target.waited ? PidListString(target.waited) : "none",
								target.ended ? PidListString(target.ended) : "none")));
	return RevokeResult(fcinfo, lease.token, target.waited, target.ended);
}
