/*-------------------------------------------------------------------------
 *
 * xactstate.c
 *		What dlock remembers about the current transaction: the tokens it
 *		declared (per lock name), whether it used dlock at all, and the
 *		transaction guard every SQL-callable function passes through.
 *
 * Declared tokens.  dlock_assert(name, token), once it has vouched for the
 * token, declares it: the dlock_fence() trigger then takes it as the
 * writer's token for rows of that lock whose statement does not carry a new
 * token itself (an UPDATE that leaves the token alone, a DELETE, a
 * TRUNCATE).  A declaration is kept in TopTransactionContext with the
 * subtransaction that made it.  A subtransaction that commits hands its
 * declarations to its parent; one that aborts (ROLLBACK TO SAVEPOINT, an
 * exception caught by PL/pgSQL) forgets them, exactly as it gives back the
 * check lock the declaring dlock_assert took.  Everything is forgotten when
 * the transaction ends.  The newest declaration for a name wins.
 *
 * Check locks held.  FenceCheck() takes DLOCK_LOCK_CHECK on a name and
 * keeps it until the transaction ends; a transaction that checks the same
 * name again (dlock_assert, then the dlock_fence() trigger on every row it
 * writes) already holds it.  The lock is held by the resource owner of the
 * (sub)transaction that took it, never by a portal's (wait.c,
 * XactLockAcquire): a portal's owner is released with a subtransaction that
 * aborts while the portal runs, though earlier fetches ran outside it.  The
 * names whose check lock this transaction holds are remembered here, with
 * that subtransaction and its resource owner, and follow the lock exactly: a
 * subtransaction that commits hands them to its parent (and its parent's
 * owner), one that aborts forgets them (its owner releases its locks), and
 * the end of the transaction forgets them all.  The memory is not trusted on
 * its own: CheckLockHeld answers yes only if the lock manager also says this
 * backend holds the lock (LockHeldByMe), and forgets a name it does not, so
 * the check takes the lock again.  FenceCheck then skips taking the lock
 * only when both agree; it still reads the lease row and applies the role
 * rule every time.
 *
 * The guard.  DlockXactGuard() is called (through DlockGetRelations) by
 * every SQL-callable function before it takes or trusts any lock:
 *
 *	- it refuses to run during a parallel operation: a parallel worker's
 *	  locks are not the leader's, so a check there would protect nothing
 *	  once the worker exits.  Refusing in the leader's parallel mode too
 *	  makes the error independent of which process evaluated the call;
 *	- it marks the transaction as one that used dlock, and such a
 *	  transaction cannot be prepared (PREPARE TRANSACTION): a prepared
 *	  transaction would keep a check's protection, or an acquire's locks,
 *	  across restarts, and COMMIT PREPARED may run in a session that never
 *	  loaded dlock, so its commit cannot be forced to be synchronous.
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "compat.h"
#include "dlock.h"

/*
 * One declaration: a token for a lock name, made by a subtransaction as a
 * role (the current user of the dlock_assert, for whom the fence vouches
 * for the token wherever the write runs: fence.c).
 */
typedef struct DeclaredToken
{
	SubTransactionId subid;
	int64		token;
	Oid			role;
	text	   *name;			/* in TopTransactionContext */
} DeclaredToken;

/* Newest first; a List in TopTransactionContext, or NIL. */
static List *declared = NIL;

/* A name's check lock, held by this transaction (see above). */
typedef struct HeldCheckLock
{
	SubTransactionId subid;		/* the (sub)transaction that holds it */
	ResourceOwner owner;		/* its resource owner, which holds the lock */
	uint32		key_high;		/* the locktag's field2 and field3 */
	uint32		key_low;
} HeldCheckLock;

/* A List in TopTransactionContext, or NIL. */
static List *held_checks = NIL;

/* Did this transaction call a dlock function (PREPARE is refused)? */
static bool xact_used_dlock = false;

/* The move of a row to another partition that is being fenced, if any. */
static FenceMove pending_move;

static bool callbacks_registered = false;

static void
DeclareForgetAll(void)
{
	declared = NIL;				/* its memory goes with the transaction */
	held_checks = NIL;
	xact_used_dlock = false;
	pending_move.stage = FENCE_MOVE_NONE;
}

static void
DeclareXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			if (xact_used_dlock)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot prepare a transaction that has used dlock"),
						 errdetail("A prepared transaction would keep a lease's protection across restarts, and its COMMIT PREPARED cannot be made to wait for synchronous standbys."),
						 errhint("Commit the transaction with COMMIT, or prepare only transactions that call no dlock function.")));
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
			DeclareForgetAll();
			break;
		default:
			break;
	}
}

static void
DeclareSubXactCallback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;

	switch (event)
	{
		case SUBXACT_EVENT_COMMIT_SUB:
			foreach(lc, declared)
			{
				DeclaredToken *d = (DeclaredToken *) lfirst(lc);

				if (d->subid == mySubid)
					d->subid = parentSubid;
			}
			foreach(lc, held_checks)
			{
				HeldCheckLock *h = (HeldCheckLock *) lfirst(lc);

				if (h->subid == mySubid)
				{
					/* The commit hands the lock to the parent's owner. */
					h->subid = parentSubid;
					h->owner = ResourceOwnerGetParent(h->owner);
				}
			}
			break;
		case SUBXACT_EVENT_ABORT_SUB:
			foreach(lc, declared)
			{
				DeclaredToken *d = (DeclaredToken *) lfirst(lc);

				if (d->subid == mySubid)
					declared = foreach_delete_current(declared, lc);
			}
			foreach(lc, held_checks)
			{
				HeldCheckLock *h = (HeldCheckLock *) lfirst(lc);

				if (h->subid == mySubid)
					held_checks = foreach_delete_current(held_checks, lc);
			}
			pending_move.stage = FENCE_MOVE_NONE;
			break;
		default:
			break;
	}
}

static void
DeclareRegisterCallbacks(void)
{
	if (callbacks_registered)
		return;
	RegisterXactCallback(DeclareXactCallback, NULL);
	RegisterSubXactCallback(DeclareSubXactCallback, NULL);
	callbacks_registered = true;
}

/*
 * The guard every SQL-callable function passes through (from
 * DlockGetRelations) before it takes or trusts a lock.
 */
void
DlockXactGuard(void)
{
	if (IsInParallelMode())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_STATE),
				 errmsg("cannot call dlock functions during a parallel operation"),
				 errdetail("A lock taken by a parallel worker is not held by the leader's transaction, so it would protect nothing."),
				 errhint("Mark functions that call dlock functions PARALLEL UNSAFE.")));
	DeclareRegisterCallbacks();
	xact_used_dlock = true;
}

/* Declare token as this transaction's token for the lock name. */
void
DeclareToken(text *name, int64 token)
{
	MemoryContext oldcxt;
	DeclaredToken *d;

	DeclareRegisterCallbacks();
	oldcxt = MemoryContextSwitchTo(TopTransactionContext);
	d = (DeclaredToken *) palloc(sizeof(DeclaredToken));
	d->subid = GetCurrentSubTransactionId();
	d->token = token;
	d->role = GetUserId();
	d->name = (text *) palloc(VARHDRSZ + VARSIZE_ANY_EXHDR(name));
	SET_VARSIZE(d->name, VARHDRSZ + VARSIZE_ANY_EXHDR(name));
	memcpy(VARDATA(d->name), VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name));
	declared = lcons(d, declared);
	MemoryContextSwitchTo(oldcxt);
}

/* Are two lock names the same bytes? */
bool
DlockNamesEqual(text *a, text *b)
{
	return VARSIZE_ANY_EXHDR(a) == VARSIZE_ANY_EXHDR(b) &&
		memcmp(VARDATA_ANY(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(a)) == 0;
}

/*
 * The token this transaction declared for name, and the role that declared
 * it, if it declared one.
 */
bool
DeclaredTokenFor(text *name, int64 *token, Oid *role)
{
	ListCell   *lc;

	foreach(lc, declared)
	{
		DeclaredToken *d = (DeclaredToken *) lfirst(lc);

		if (DlockNamesEqual(d->name, name))
		{
			*token = d->token;
			*role = d->role;
			return true;
		}
	}
	return false;
}

#ifdef USE_ASSERT_CHECKING
/* Is owner the current (sub)transaction's resource owner or an ancestor? */
static bool
OwnerEnclosesCurrent(ResourceOwner owner)
{
	ResourceOwner o;

	for (o = CurTransactionResourceOwner; o != NULL;
		 o = ResourceOwnerGetParent(o))
	{
		if (o == owner)
			return true;
	}
	return false;
}
#endif

/*
 * Does this transaction hold the check lock whose tag is tag, taken by
 * FenceCheck and remembered by CheckLockRemember?  Yes only if the lock
 * manager agrees; a remembered lock it does not know is forgotten.
 */
bool
CheckLockHeld(const LOCKTAG *tag)
{
	ListCell   *lc;

	foreach(lc, held_checks)
	{
		HeldCheckLock *h = (HeldCheckLock *) lfirst(lc);

		if (h->key_high == tag->locktag_field2 &&
			h->key_low == tag->locktag_field3)
		{
			Assert(OwnerEnclosesCurrent(h->owner));
			if (DlockLockHeldByMe(tag, DLOCK_LOCK_CHECK))
				return true;
			held_checks = foreach_delete_current(held_checks, lc);
			return false;
		}
	}
	return false;
}

/*
 * FenceCheck took the check lock whose tag is tag, under the resource owner
 * of the current (sub)transaction (NameLockWait), and keeps it.
 */
void
CheckLockRemember(const LOCKTAG *tag)
{
	MemoryContext oldcxt;
	HeldCheckLock *h;

	Assert(tag->locktag_field1 == MyDatabaseId &&
		   tag->locktag_field4 == DLOCK_LOCKTAG_NAME);
	DeclareRegisterCallbacks();
	oldcxt = MemoryContextSwitchTo(TopTransactionContext);
	h = (HeldCheckLock *) palloc(sizeof(HeldCheckLock));
	h->subid = GetCurrentSubTransactionId();
	h->owner = CurTransactionResourceOwner;
	h->key_high = tag->locktag_field2;
	h->key_low = tag->locktag_field3;
	held_checks = lappend(held_checks, h);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * The partition move being fenced (fence.c): one per backend, forgotten at
 * the end of the transaction and on a subtransaction's abort.
 */
FenceMove *
FencePendingMove(void)
{
	DeclareRegisterCallbacks();
	return &pending_move;
}
