/*-------------------------------------------------------------------------
 *
 * stats.c
 *		The counters of dlock_stats and dlock_stats_total: the one home of
 *		every counter dlock keeps.
 *
 * Two kinds of counter.  Those of a call that writes the lease row anyway
 * (acquisitions, owner renewals, renewals, releases, takeovers, lost
 * leases, waits that ended with the lease) are columns of that row,
 * changed by the same update: no extra row, no extra WAL record.  A
 * dlock_cleanup that deletes rows adds their counters to the one row of
 * dlock_stats_retired in its own transaction, so totals never go down but
 * by a reset.  A reset writes no lease row: it records the row's counters
 * as a baseline (dlock_stats_base) that the views subtract.
 *
 * Those of a call that writes nothing (a busy answer, a wait that timed
 * out) or whose transaction aborts (an LK001 refusal) can only live in
 * shared memory: a hash table of names per database and one total per
 * database, which exists only when the library is in
 * shared_preload_libraries.  Without it they are NULL in the views, never
 * 0.  They count from the server's start (or the last reset), and a name
 * that does not fit (dlock.stats_max_names) is counted in its database's
 * total only.  The names' room is the cluster's, but a database below its
 * share of it takes room from the one holding the most (StatsEvictLocked),
 * whose evicted names become unknown.  A dropped database's names and
 * total go when its DROP DATABASE commits (StatsObjectAccess), so the
 * share is divided between the databases that exist.  A name's counters are NULL, not 0, where they may miss
 * something (a10 F10): once a name of a database did not fit, its total
 * says so (missed), and then a name with no entry, and one whose entry was
 * made after that, may have missed events: unknown until a reset of the
 * database's counters (or of the name's) starts them again from 0.
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_database.h"
#include "executor/executor.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "compat.h"
#include "dlock.h"

PG_FUNCTION_INFO_V1(dlock_stats_shared);
PG_FUNCTION_INFO_V1(dlock_stats_reset);

int			dlock_stats_max_names = 1000;

/* The columns of the counters, by name: in dlock_lease and in the retired row. */
static const char *const stats_columns[DLOCK_STATS_COLS] = {
	"acquisitions", "owner_renewals", "renewals", "releases", "takeovers",
	"lost", "waits", "wait_time", "wait_time_max", "stats_reset"
};

/* One name's (or, with an empty name, one database's) shared counters. */
typedef struct StatsKey
{
	Oid			dbid;
	bool		total;
	char		name[DLOCK_MAX_NAME_BYTES + 1];	/* zero-padded */
} StatsKey;

typedef struct StatsEntry
{
	StatsKey	key;
	pg_atomic_uint64 busy;
	pg_atomic_uint64 fence_refusals;
	/* under the lock in exclusive mode: */
	bool		missed;			/* total: names of the database were missed;
								 * name: made after that */
	int			names;			/* total: the database's names with an entry */
	int64		wait_timeouts;
	double		timeout_time;
	double		timeout_time_max;
} StatsEntry;

typedef struct StatsShared
{
	LWLock	   *lock;
	int			names;			/* entries that are names, not totals */
	int			totals;			/* entries that are totals: the databases
								 * that counted since the server started,
								 * but those dropped since */
	bool		missed_anywhere;	/* names were missed in a database whose
									 * total could not be made: every name
									 * is unknown */
} StatsShared;

static StatsShared *stats_shared = NULL;
static HTAB *stats_hash = NULL;

/*
 * The waiting acquires of the cluster, by pid, for dlock_waiters' since
 * and deadline: at most DLOCK_MAX_WAITERS at once are known (the view
 * shows NULL for the others).  A backend's entry is removed when its wait
 * ends, or when the (sub)transaction of the wait aborts.
 */
#define DLOCK_MAX_WAITERS 1024

typedef struct WaiterEntry
{
	int			pid;
	TimestampTz start;
	TimestampTz deadline;
} WaiterEntry;

static HTAB *waiter_hash = NULL;
static bool waiter_registered = false;
static SubTransactionId waiter_subid;	/* the subtransaction that waits */
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static object_access_hook_type prev_object_access_hook = NULL;

/*
 * A change of the shared counters that must follow the fate of the
 * transaction asking for it (a reset, or a cleanup forgetting a name):
 * made when the transaction commits, dropped when it, or the
 * subtransaction that asked, rolls back.
 */
typedef struct StatsPending
{
	bool		forget;			/* remove the name's entry, else zero it */
	text	   *name;			/* NULL: every entry of the database */
	Oid			dropped;		/* valid: remove every entry of this
								 * database (it is being dropped) */
	int			nest_level;		/* of the (sub)transaction that asked */
} StatsPending;

static List *stats_pending = NIL;	/* in TopTransactionContext */

#ifdef DLOCK_SHMEM_REQUEST_HOOK
static shmem_request_hook_type prev_shmem_request_hook = NULL;
#endif

/* Room for the names and for one total per database. */
static long
StatsHashSize(void)
{
	return (long) dlock_stats_max_names + 64;
}

static void
StatsShmemRequest(void)
{
#ifdef DLOCK_SHMEM_REQUEST_HOOK
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
#endif
	RequestAddinShmemSpace(MAXALIGN(sizeof(StatsShared)) +
						   hash_estimate_size(StatsHashSize(),
											  sizeof(StatsEntry)) +
						   hash_estimate_size(DLOCK_MAX_WAITERS,
											  sizeof(WaiterEntry)));
	RequestNamedLWLockTranche("dlock", 1);
}

static void
StatsShmemStartup(void)
{
	bool		found;
	HASHCTL		info;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	stats_shared = ShmemInitStruct("dlock stats", sizeof(StatsShared), &found);
	if (!found)
	{
		stats_shared->lock = &(GetNamedLWLockTranche("dlock"))->lock;
		stats_shared->names = 0;
		stats_shared->totals = 0;
		stats_shared->missed_anywhere = false;
	}
	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(StatsKey);
	info.entrysize = sizeof(StatsEntry);
	stats_hash = ShmemInitHash("dlock stats names", StatsHashSize(),
							   StatsHashSize(), &info,
							   HASH_ELEM | HASH_BLOBS);
	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(int);
	info.entrysize = sizeof(WaiterEntry);
	waiter_hash = ShmemInitHash("dlock waiters", DLOCK_MAX_WAITERS,
								DLOCK_MAX_WAITERS, &info,
								HASH_ELEM | HASH_BLOBS);
	LWLockRelease(AddinShmemInitLock);
}

/* This backend's wait ends: its entry goes. */
void
StatsWaitEnd(void)
{
	if (!waiter_registered || waiter_hash == NULL)
		return;
	LWLockAcquire(stats_shared->lock, LW_EXCLUSIVE);
	(void) hash_search(waiter_hash, &MyProcPid, HASH_REMOVE, NULL);
	LWLockRelease(stats_shared->lock);
	waiter_registered = false;
}

/* A waiting acquire begins: its start and deadline, for dlock_waiters. */
void
StatsWaitBegin(const DlockWait *w)
{
	WaiterEntry *e;

	if (waiter_hash == NULL)
		return;
	LWLockAcquire(stats_shared->lock, LW_EXCLUSIVE);
	e = hash_search(waiter_hash, &MyProcPid, HASH_ENTER_NULL, NULL);
	if (e != NULL)
	{
		e->start = w->start;
		e->deadline = w->deadline;
		waiter_registered = true;
		waiter_subid = GetCurrentSubTransactionId();
	}
	LWLockRelease(stats_shared->lock);
}

/* The start and deadline of pid's waiting acquire, if known. */
bool
StatsWaitOf(int pid, TimestampTz *start, TimestampTz *deadline)
{
	WaiterEntry *e;
	bool		found = false;

	if (waiter_hash == NULL)
		return false;
	LWLockAcquire(stats_shared->lock, LW_SHARED);
	e = hash_search(waiter_hash, &pid, HASH_FIND, NULL);
	if (e != NULL)
	{
		*start = e->start;
		*deadline = e->deadline;
		found = true;
	}
	LWLockRelease(stats_shared->lock);
	return found;
}

static void StatsForgetNow(text *name);
static void StatsResetNow(text *name);
static void StatsForgetDatabaseNow(Oid dbid);

/*
 * A wait ended by an error: its entry goes with the (sub)transaction.  The
 * pending changes of the shared counters are made at commit, and dropped
 * at an abort or a PREPARE (a prepared transaction commits elsewhere).
 */
static void
StatsXactCallback(XactEvent event, void *arg)
{
	ListCell   *lc;

	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		StatsWaitEnd();
	if (event == XACT_EVENT_COMMIT)
		foreach(lc, stats_pending)
		{
			StatsPending *p = (StatsPending *) lfirst(lc);

			if (OidIsValid(p->dropped))
				StatsForgetDatabaseNow(p->dropped);
			else if (p->forget)
				StatsForgetNow(p->name);
			else
				StatsResetNow(p->name);
		}
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_ABORT)
		stats_pending = NIL;	/* its memory goes with the transaction */
}

/*
 * At a subtransaction's end, its pending changes go (abort) or become the
 * parent's (commit).
 */
static void
StatsPendingSubXactEnd(bool commit)
{
	int			level = GetCurrentTransactionNestLevel();
	List	   *kept = NIL;
	ListCell   *lc;

	foreach(lc, stats_pending)
	{
		StatsPending *p = (StatsPending *) lfirst(lc);

		if (p->nest_level < level)
			kept = lappend(kept, p);
		else if (commit)
		{
			p->nest_level = level - 1;
			kept = lappend(kept, p);
		}
	}
	stats_pending = kept;
}

static void
StatsSubXactCallback(SubXactEvent event, SubTransactionId mySubid,
					 SubTransactionId parentSubid, void *arg)
{
	/* Not the internal subtransactions of the wait itself (wait.c). */
	if (event == SUBXACT_EVENT_ABORT_SUB && waiter_registered &&
		mySubid == waiter_subid)
		StatsWaitEnd();
	if ((event == SUBXACT_EVENT_ABORT_SUB ||
		 event == SUBXACT_EVENT_COMMIT_SUB) && stats_pending != NIL)
		StatsPendingSubXactEnd(event == SUBXACT_EVENT_COMMIT_SUB);
}

/*
 * Make a change of the shared counters when this transaction commits: of
 * the name (NULL: every name of this database), or with dropped valid,
 * the removal of that database's entries.
 */
static void
StatsAtCommit(text *name, bool forget, Oid dropped)
{
	MemoryContext old;
	StatsPending *p;

	if (stats_hash == NULL)
		return;
	old = MemoryContextSwitchTo(TopTransactionContext);
	p = palloc(sizeof(StatsPending));
	p->forget = forget;
	p->dropped = dropped;
	p->name = NULL;
	if (name != NULL)
	{
		p->name = palloc(VARSIZE_ANY(name));
		memcpy(p->name, name, VARSIZE_ANY(name));
	}
	p->nest_level = GetCurrentTransactionNestLevel();
	stats_pending = lappend(stats_pending, p);
	MemoryContextSwitchTo(old);
}

/*
 * A DROP DATABASE (attack5 F4): the database's shared counters go when it
 * commits, so that its names stop holding room and it stops counting in
 * the share of the others.  The hook runs in dropdb before its last
 * checks; an error after it rolls the removal back with the transaction.
 * No backend is connected to the database by then (dropdb refuses or ends
 * them, and its lock keeps new ones out), so nothing counts for it again.
 */
static void
StatsObjectAccess(ObjectAccessType access, Oid classId, Oid objectId,
				  int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (access == OAT_DROP && classId == DatabaseRelationId &&
		OidIsValid(objectId))
		StatsAtCommit(NULL, true, objectId);
}

/* Called from _PG_init: shared counters only when preloaded. */
void
StatsInit(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	DefineCustomIntVariable("dlock.stats_max_names",
							"Number of lock names whose busy answers, timed-out waits and LK001 refusals are counted in shared memory.",
							"Further names are counted in their database's total only.",
							&dlock_stats_max_names,
							1000,
							0,
							1000000,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);
#ifdef DLOCK_SHMEM_REQUEST_HOOK
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = StatsShmemRequest;
#else
	StatsShmemRequest();
#endif
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = StatsShmemStartup;
	RegisterXactCallback(StatsXactCallback, NULL);
	RegisterSubXactCallback(StatsSubXactCallback, NULL);
	prev_object_access_hook = object_access_hook;
	object_access_hook = StatsObjectAccess;
}

static void
StatsKeyMake(StatsKey *key, text *name)
{
	memset(key, 0, sizeof(StatsKey));
	key->dbid = MyDatabaseId;
	key->total = name == NULL;
	if (name != NULL)
		memcpy(key->name, VARDATA_ANY(name),
			   Min(VARSIZE_ANY_EXHDR(name), DLOCK_MAX_NAME_BYTES));
}

static void
StatsEntryInit(StatsEntry *e)
{
	pg_atomic_init_u64(&e->busy, 0);
	pg_atomic_init_u64(&e->fence_refusals, 0);
	e->missed = false;
	e->wait_timeouts = 0;
	e->timeout_time = 0;
	e->timeout_time_max = 0;
}

static bool StatsEvictOneLocked(void);

/*
 * The total of this database, made if missing; the lock is held in
 * exclusive mode.  The table has room for 64 totals beyond the names'
 * (StatsHashSize), and more while the server's spare shared memory lasts
 * (dynahash takes it); when it is full, a name's entry is evicted for the
 * total, as totals are to stay exact (StatsEvictOneLocked).  NULL if there
 * is no room still: every entry is a total.
 */
static StatsEntry *
StatsTotalLocked(void)
{
	StatsKey	key;
	StatsEntry *e;
	bool		found;

	StatsKeyMake(&key, NULL);
	e = hash_search(stats_hash, &key, HASH_ENTER_NULL, &found);
	if (e == NULL && StatsEvictOneLocked())
		e = hash_search(stats_hash, &key, HASH_ENTER_NULL, &found);
	if (e != NULL && !found)
	{
		StatsEntryInit(e);
		e->names = 0;
		stats_shared->totals++;
	}
	return e;
}

/*
 * Remove the entry of a name (key, a copy: not in the entry itself), if it
 * has one; the lock is held in exclusive mode.
 */
static bool
StatsNameRemoveLocked(const StatsKey *key)
{
	StatsKey	tkey;
	StatsEntry *total;
	bool		found;

	(void) hash_search(stats_hash, key, HASH_REMOVE, &found);
	if (!found)
		return false;
	stats_shared->names--;
	memset(&tkey, 0, sizeof(tkey));
	tkey.dbid = key->dbid;
	tkey.total = true;
	total = hash_search(stats_hash, &tkey, HASH_FIND, NULL);
	if (total != NULL && total->names > 0)
		total->names--;
	return true;
}

/* How much a name's entry counted since it was made or reset. */
static uint64
StatsUsage(StatsEntry *e)
{
	return pg_atomic_read_u64(&e->busy) + pg_atomic_read_u64(&e->fence_refusals);
}

/* Eviction order: the names already unknown first, then the least counted. */
static int
StatsEvictionOrder(const void *a, const void *b)
{
	StatsEntry *x = *(StatsEntry *const *) a;
	StatsEntry *y = *(StatsEntry *const *) b;
	uint64		ux;
	uint64		uy;

	if (x->missed != y->missed)
		return x->missed ? -1 : 1;
	ux = StatsUsage(x);
	uy = StatsUsage(y);
	return ux < uy ? -1 : ux > uy ? 1 : 0;
}

/*
 * Evict one name, the first in the eviction order of the database holding
 * the most, to make room for a database's total in a table full of
 * entries (more databases count than StatsHashSize leaves totals room
 * for).  The lock is held in exclusive mode; false if no entry is a name.
 */
static bool
StatsEvictOneLocked(void)
{
	HASH_SEQ_STATUS seq;
	StatsEntry *e;
	StatsEntry *largest = NULL;
	StatsEntry *victim = NULL;
	StatsKey	key;

	hash_seq_init(&seq, stats_hash);
	while ((e = hash_seq_search(&seq)) != NULL)
		if (e->key.total && e->names > 0 &&
			(largest == NULL || e->names > largest->names))
			largest = e;
	hash_seq_init(&seq, stats_hash);
	while ((e = hash_seq_search(&seq)) != NULL)
		if (!e->key.total &&
			(largest == NULL || e->key.dbid == largest->key.dbid) &&
			(victim == NULL || StatsEvictionOrder(&e, &victim) < 0))
			victim = e;
	if (victim == NULL)
		return false;
	key = victim->key;
	(void) StatsNameRemoveLocked(&key);
	/* The database of a name without a total can record no miss. */
	if (largest != NULL)
		largest->missed = true;
	else
		stats_shared->missed_anywhere = true;
	return true;
}

/*
 * Room in a full table for a name of this database, whose total is mine
 * (attack4 F4: one database must not keep the others from counting by
 * name).
 * A database holding fewer names than its share, dlock.stats_max_names
 * divided by the databases that counted since the server started and
 * still exist (at least 1: more databases than names), takes
 * room from the one holding the most, if that one holds more than its
 * share: its least counted names are evicted (those already unknown
 * first), down to its share at most and a hundredth of the table at a
 * time, so that one scan of the table makes room for many names.  An
 * evicted name's counters become unknown, as those of a name that did not
 * fit: its database's total records the miss.  A database at its share
 * scans nothing.  The lock is held in exclusive mode; false if no room was
 * made (also when the memory to sort the candidates is lacking).
 */
static bool
StatsEvictLocked(StatsEntry *mine)
{
	HASH_SEQ_STATUS seq;
	StatsEntry *e;
	StatsEntry *largest = NULL;
	StatsEntry **victims;
	int			share;
	int			n = 0;
	int			evict;
	int			i;

	if (mine == NULL || stats_shared->totals == 0)
		return false;
	share = Max(1, dlock_stats_max_names / stats_shared->totals);
	if (mine->names >= share)
		return false;
	hash_seq_init(&seq, stats_hash);
	while ((e = hash_seq_search(&seq)) != NULL)
		if (e->key.total && e != mine &&
			(largest == NULL || e->names > largest->names))
			largest = e;
	if (largest == NULL || largest->names <= share)
		return false;
	/* No error here: a reset's commit callback may be the caller. */
	victims = palloc_extended(largest->names * sizeof(StatsEntry *),
							  MCXT_ALLOC_NO_OOM);
	if (victims == NULL)
		return false;
	hash_seq_init(&seq, stats_hash);
	while ((e = hash_seq_search(&seq)) != NULL)
		if (!e->key.total && e->key.dbid == largest->key.dbid &&
			n < largest->names)
			victims[n++] = e;
	qsort(victims, n, sizeof(StatsEntry *), StatsEvictionOrder);
	evict = Min(Min(largest->names - share,
					Max(1, dlock_stats_max_names / 100)), n);
	for (i = 0; i < evict; i++)
	{
		StatsKey	key = victims[i]->key;

		(void) StatsNameRemoveLocked(&key);
	}
	largest->missed = true;
	pfree(victims);
	return evict > 0;
}

/*
 * A new entry for the name of key, if there is room or room can be made
 * (StatsEvictLocked); the lock is held in exclusive mode.
 */
static StatsEntry *
StatsNameEnterLocked(const StatsKey *key)
{
	StatsEntry *total = StatsTotalLocked();
	StatsEntry *e;

	if (stats_shared->names >= dlock_stats_max_names &&
		!StatsEvictLocked(total))
		return NULL;
	e = hash_search(stats_hash, key, HASH_ENTER_NULL, NULL);
	/* Totals beyond the 64 of StatsHashSize took names' room. */
	if (e == NULL && StatsEvictLocked(total))
		e = hash_search(stats_hash, key, HASH_ENTER_NULL, NULL);
	if (e == NULL)
		return NULL;
	stats_shared->names++;
	if (total != NULL)
		total->names++;
	StatsEntryInit(e);
	return e;
}

/*
 * Whether names of this database were missed (a name's entry made now may
 * lack events counted nowhere before), or with missed, record that they
 * were; the lock is held in exclusive mode.
 */
static bool
StatsNamesMissed(bool missed)
{
	StatsEntry *total = StatsTotalLocked();

	if (total == NULL)
	{
		if (missed)
			stats_shared->missed_anywhere = true;
		return true;
	}
	if (missed)
		total->missed = true;
	return total->missed || stats_shared->missed_anywhere;
}

/*
 * The entry of name (NULL: the database's total), made if missing and
 * there is room; NULL if not (a name's: recorded as missed).  The lock is
 * held on return, in exclusive mode if *exclusive (set when the entry had
 * to be made or exclusive was asked for), else shared.
 */
static StatsEntry *
StatsEntryGet(text *name, bool *exclusive)
{
	StatsKey	key;
	StatsEntry *e;

	StatsKeyMake(&key, name);
	if (!*exclusive)
	{
		LWLockAcquire(stats_shared->lock, LW_SHARED);
		e = hash_search(stats_hash, &key, HASH_FIND, NULL);
		if (e != NULL)
			return e;
		LWLockRelease(stats_shared->lock);
		*exclusive = true;
	}
	LWLockAcquire(stats_shared->lock, LW_EXCLUSIVE);
	e = hash_search(stats_hash, &key, HASH_FIND, NULL);
	if (e != NULL)
		return e;
	if (name == NULL)
		return StatsTotalLocked();
	e = StatsNameEnterLocked(&key);
	if (e == NULL)
	{
		(void) StatsNamesMissed(true);
		return NULL;
	}
	e->missed = StatsNamesMissed(false);
	return e;
}

typedef enum StatsEvent
{
	STATS_BUSY,
	STATS_FENCE_REFUSAL,
	STATS_WAIT_TIMEOUT
} StatsEvent;

static void
StatsEntryCount(StatsEntry *e, StatsEvent event, double seconds)
{
	if (e == NULL)
		return;
	if (event == STATS_FENCE_REFUSAL)
		pg_atomic_fetch_add_u64(&e->fence_refusals, 1);
	else
		pg_atomic_fetch_add_u64(&e->busy, 1);
	if (event == STATS_WAIT_TIMEOUT)
	{
		e->wait_timeouts++;
		e->timeout_time += seconds;
		e->timeout_time_max = Max(e->timeout_time_max, seconds);
	}
}

/* Count one event for name and for its database. */
static void
StatsCount(text *name, StatsEvent event, double seconds)
{
	bool		exclusive = event == STATS_WAIT_TIMEOUT;

	if (stats_hash == NULL)
		return;
	StatsEntryCount(StatsEntryGet(name, &exclusive), event, seconds);
	LWLockRelease(stats_shared->lock);
	exclusive = event == STATS_WAIT_TIMEOUT;
	StatsEntryCount(StatsEntryGet(NULL, &exclusive), event, seconds);
	LWLockRelease(stats_shared->lock);
}

/* An acquire that answered NULL without waiting. */
void
StatsCountBusy(text *name)
{
	StatsCount(name, STATS_BUSY, 0);
}

/* An acquire that waited and answered NULL, after waited microseconds. */
void
StatsCountWaitTimeout(text *name, int64 waited)
{
	StatsCount(name, STATS_WAIT_TIMEOUT, waited / 1000000.0);
}

/* An LK001 about to be raised for name. */
void
StatsCountFenceRefusal(text *name)
{
	StatsCount(name, STATS_FENCE_REFUSAL, 0);
}

/*
 * Forget the shared counters of name (its row was deleted) when this
 * transaction commits.
 */
void
StatsForgetName(text *name)
{
	StatsAtCommit(name, true, InvalidOid);
}

static void
StatsForgetNow(text *name)
{
	StatsKey	key;

	if (stats_hash == NULL)
		return;
	StatsKeyMake(&key, name);
	LWLockAcquire(stats_shared->lock, LW_EXCLUSIVE);
	(void) StatsNameRemoveLocked(&key);
	LWLockRelease(stats_shared->lock);
}

/*
 * Remove every entry of the database dbid, which was dropped: its names
 * and its total stop holding room, and it stops counting in the share.
 * From the commit callback: no error.
 */
static void
StatsForgetDatabaseNow(Oid dbid)
{
	HASH_SEQ_STATUS seq;
	StatsEntry *e;

	if (stats_hash == NULL)
		return;
	LWLockAcquire(stats_shared->lock, LW_EXCLUSIVE);
	hash_seq_init(&seq, stats_hash);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		StatsKey	key;

		if (e->key.dbid != dbid)
			continue;
		key = e->key;
		/* dynahash allows removing the entry a scan just returned */
		(void) hash_search(stats_hash, &key, HASH_REMOVE, NULL);
		if (key.total)
			stats_shared->totals--;
		else
			stats_shared->names--;
	}
	LWLockRelease(stats_shared->lock);
}

/*
 * Zero the shared counters of name, or with name NULL all of the
 * database's, when this transaction commits.
 */
static void
StatsResetShared(text *name)
{
	StatsAtCommit(name, false, InvalidOid);
}

static void
StatsResetNow(text *name)
{
	HASH_SEQ_STATUS seq;
	StatsEntry *e;
	StatsKey	key;

	if (stats_hash == NULL)
		return;
	StatsKeyMake(&key, name);
	LWLockAcquire(stats_shared->lock, LW_EXCLUSIVE);
	if (name != NULL)
	{
		/*
		 * A name without an entry while names were missed gets one if there
		 * is room (or its database's share makes room), so that it counts
		 * from 0 again.
		 */
		e = hash_search(stats_hash, &key, HASH_FIND, NULL);
		if (e == NULL && StatsNamesMissed(false))
			e = StatsNameEnterLocked(&key);
		if (e != NULL)
			StatsEntryInit(e);
		LWLockRelease(stats_shared->lock);
		return;
	}
	hash_seq_init(&seq, stats_hash);
	while ((e = hash_seq_search(&seq)) != NULL)
		if (e->key.dbid == MyDatabaseId)
			StatsEntryInit(e);
	LWLockRelease(stats_shared->lock);
}

/*
 * The columns of the counters in the lease table and the retired table,
 * found by name (the 1.2 update adds them; a 1.1 table has none).
 */
void
StatsFindColumns(DlockRelations *rels, Oid nspid)
{
	int			i;

	rels->has_stats = true;
	for (i = 0; i < DLOCK_STATS_COLS; i++)
	{
		rels->stats_att[i] = get_attnum(rels->lease_table, stats_columns[i]);
		if (rels->stats_att[i] == InvalidAttrNumber)
			rels->has_stats = false;
	}
	rels->stats_retired = rels->has_stats ?
		get_relname_relid("dlock_stats_retired", nspid) : InvalidOid;
	rels->stats_base = rels->has_stats ?
		get_relname_relid("dlock_stats_base", nspid) : InvalidOid;
	if (!OidIsValid(rels->stats_retired) || !OidIsValid(rels->stats_base))
		rels->has_stats = false;
}

/* The counters of a row, into *s (zero where a value is NULL). */
void
StatsFromValues(const AttrNumber *att, const Datum *values, const bool *nulls,
				DlockLeaseStats *s)
{
	int			i;

	memset(s, 0, sizeof(DlockLeaseStats));
	for (i = 0; i < DLOCK_STATS_NCOUNTS; i++)
		if (!nulls[att[i] - 1])
			s->count[i] = DatumGetInt64(values[att[i] - 1]);
	if (!nulls[att[DLOCK_STATS_WAIT_TIME] - 1])
		s->wait_time = DatumGetFloat8(values[att[DLOCK_STATS_WAIT_TIME] - 1]);
	if (!nulls[att[DLOCK_STATS_WAIT_TIME_MAX] - 1])
		s->wait_time_max =
			DatumGetFloat8(values[att[DLOCK_STATS_WAIT_TIME_MAX] - 1]);
	s->has_reset = !nulls[att[DLOCK_STATS_RESET] - 1];
	if (s->has_reset)
		s->reset = DatumGetTimestampTz(values[att[DLOCK_STATS_RESET] - 1]);
}

/* The counters *s into a row's values. */
void
StatsToValues(const AttrNumber *att, const DlockLeaseStats *s, Datum *values,
			  bool *nulls)
{
	int			i;

	for (i = 0; i < DLOCK_STATS_NCOUNTS; i++)
	{
		nulls[att[i] - 1] = false;
		values[att[i] - 1] = Int64GetDatum(s->count[i]);
	}
	nulls[att[DLOCK_STATS_WAIT_TIME] - 1] = false;
	values[att[DLOCK_STATS_WAIT_TIME] - 1] = Float8GetDatum(s->wait_time);
	nulls[att[DLOCK_STATS_WAIT_TIME_MAX] - 1] = false;
	values[att[DLOCK_STATS_WAIT_TIME_MAX] - 1] =
		Float8GetDatum(s->wait_time_max);
	nulls[att[DLOCK_STATS_RESET] - 1] = !s->has_reset;
	values[att[DLOCK_STATS_RESET] - 1] = TimestampTzGetDatum(s->reset);
}

/* A wait of waited microseconds that ended with the lease. */
void
StatsNoteWait(DlockLeaseStats *s, int64 waited)
{
	double		seconds = waited / 1000000.0;

	s->count[DLOCK_STATS_WAITS]++;
	s->wait_time += seconds;
	s->wait_time_max = Max(s->wait_time_max, seconds);
}

/* Add the counters of *from to *to. */
void
StatsAdd(DlockLeaseStats *to, const DlockLeaseStats *from)
{
	int			i;

	for (i = 0; i < DLOCK_STATS_NCOUNTS; i++)
		to->count[i] += from->count[i];
	to->wait_time += from->wait_time;
	to->wait_time_max = Max(to->wait_time_max, from->wait_time_max);
}

/*
 * Change the one row of dlock_stats_retired: add *add to it, or (add NULL)
 * zero it as reset at the time reset.  The table is locked in
 * ExclusiveLock until the transaction ends, so that cleanups and resets
 * change it one after the other; readers (the views) are not blocked.
 */
void
StatsRetire(const DlockRelations *rels, const DlockLeaseStats *add,
			TimestampTz reset)
{
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot *slot;
	TupleTableSlot *searchslot;
	DlockLeaseStats s;
	AttrNumber	att[DLOCK_STATS_COLS];
	int			i;

	if (!rels->has_stats)
		return;
	XactLockRelation(rels->stats_retired, ExclusiveLock);
	rel = table_open(rels->stats_retired, ExclusiveLock);
	for (i = 0; i < DLOCK_STATS_COLS; i++)
		att[i] = get_attnum(rels->stats_retired, stats_columns[i]);
	estate = CreateExecutorState();
	rri = makeNode(ResultRelInfo);
	InitResultRelInfo(rri, rel, 0, NULL, 0);
	ExecOpenIndices(rri, false);
	slot = ExecInitExtraTupleSlot(estate, RelationGetDescr(rel), &TTSOpsVirtual);
	searchslot = ExecInitExtraTupleSlot(estate, RelationGetDescr(rel),
										&TTSOpsVirtual);
	/* The row is made by the first change (a restored dump brings its own). */
	scan = systable_beginscan(rel, InvalidOid, false, SnapshotSelf, 0, NULL);
	tuple = systable_getnext(scan);
	ExecClearTuple(slot);
	memset(slot->tts_isnull, true, RelationGetDescr(rel)->natts * sizeof(bool));
	ItemPointerSetInvalid(&searchslot->tts_tid);
	if (HeapTupleIsValid(tuple))
	{
		heap_deform_tuple(tuple, RelationGetDescr(rel), slot->tts_values,
						  slot->tts_isnull);
		searchslot->tts_tid = tuple->t_self;
	}
	systable_endscan(scan);
	StatsFromValues(att, slot->tts_values, slot->tts_isnull, &s);
	if (add != NULL)
		StatsAdd(&s, add);
	else
	{
		memset(&s, 0, sizeof(s));
		s.has_reset = true;
		s.reset = reset;
	}
	StatsToValues(att, &s, slot->tts_values, slot->tts_isnull);
	ExecStoreVirtualTuple(slot);
	if (ItemPointerIsValid(&searchslot->tts_tid))
		ExecSimpleRelationUpdate(rri, estate, NULL, searchslot, slot);
	else
	{
		AttrNumber	one = get_attnum(rels->stats_retired, "one");

		if (one == InvalidAttrNumber)
			elog(ERROR, "relation \"dlock_stats_retired\" has no column \"one\"");
		slot->tts_isnull[one - 1] = false;
		slot->tts_values[one - 1] = BoolGetDatum(true);
		ExecSimpleRelationInsert(rri, estate, slot);
	}
	ExecCloseIndices(rri);
	ExecResetTupleTable(estate->es_tupleTable, false);
	FreeExecutorState(estate);
	table_close(rel, NoLock);
	CommandCounterIncrement();
}

/* A snapshot of the shared counters of this database, for the SRF. */
typedef struct StatsRow
{
	bool		total;
	char		name[DLOCK_MAX_NAME_BYTES + 1];
	int64		busy;
	int64		wait_timeouts;
	double		timeout_time;
	double		timeout_time_max;
	int64		fence_refusals;
	bool		counted_by_name;
} StatsRow;

static StatsRow *
StatsSnapshot(int *n)
{
	HASH_SEQ_STATUS seq;
	StatsEntry *e;
	StatsRow   *rows;
	int			size = 16;

	*n = 0;
	rows = palloc(size * sizeof(StatsRow));
	if (stats_hash == NULL)
		return rows;
	/* A row for the total, even before anything was counted. */
	rows[0].total = true;
	rows[0].name[0] = '\0';
	rows[0].busy = rows[0].wait_timeouts = rows[0].fence_refusals = 0;
	rows[0].timeout_time = rows[0].timeout_time_max = 0;
	*n = 1;
	LWLockAcquire(stats_shared->lock, LW_SHARED);
	rows[0].counted_by_name = !stats_shared->missed_anywhere;
	hash_seq_init(&seq, stats_hash);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		StatsRow   *r;

		if (e->key.dbid != MyDatabaseId)
			continue;
		if (e->key.total)
			r = &rows[0];
		else
		{
			if (*n == size)
				rows = repalloc(rows, (size *= 2) * sizeof(StatsRow));
			r = &rows[(*n)++];
		}
		r->total = e->key.total;
		memcpy(r->name, e->key.name, sizeof(r->name));
		r->busy = (int64) pg_atomic_read_u64(&e->busy);
		r->fence_refusals = (int64) pg_atomic_read_u64(&e->fence_refusals);
		r->wait_timeouts = e->wait_timeouts;
		r->timeout_time = e->timeout_time;
		r->timeout_time_max = e->timeout_time_max;
		r->counted_by_name = !e->missed && !stats_shared->missed_anywhere;
	}
	LWLockRelease(stats_shared->lock);
	return rows;
}

/*
 * dlock_stats_shared(): the shared-memory counters of this database, one
 * row per name and one with a NULL name for the database's total; no row
 * at all when the library is not in shared_preload_libraries.
 * counted_by_name: a name's counters miss nothing since its last reset;
 * the total's, no name of the database was missed since the last reset of
 * everything (else a name without a row is unknown, not 0).
 */
Datum
dlock_stats_shared(PG_FUNCTION_ARGS)
{
	FuncCallContext *funcctx;
	StatsRow   *rows;

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext old;
		TupleDesc	desc;
		int			n;

		funcctx = SRF_FIRSTCALL_INIT();
		old = MemoryContextSwitchTo(funcctx->multi_call_memory_ctx);
		if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
			elog(ERROR, "return type must be a row type");
		funcctx->tuple_desc = BlessTupleDesc(desc);
		funcctx->user_fctx = StatsSnapshot(&n);
		funcctx->max_calls = n;
		MemoryContextSwitchTo(old);
	}
	funcctx = SRF_PERCALL_SETUP();
	rows = (StatsRow *) funcctx->user_fctx;
	if (funcctx->call_cntr < funcctx->max_calls)
	{
		StatsRow   *r = &rows[funcctx->call_cntr];
		Datum		values[7];
		bool		nulls[7] = {false, false, false, false, false, false, false};

		nulls[0] = r->total;
		values[0] = r->total ? (Datum) 0 : CStringGetTextDatum(r->name);
		values[1] = Int64GetDatum(r->busy);
		values[2] = Int64GetDatum(r->wait_timeouts);
		values[3] = Float8GetDatum(r->timeout_time);
		values[4] = Float8GetDatum(r->timeout_time_max);
		values[5] = Int64GetDatum(r->fence_refusals);
		values[6] = BoolGetDatum(r->counted_by_name);
		SRF_RETURN_NEXT(funcctx,
						HeapTupleGetDatum(heap_form_tuple(funcctx->tuple_desc,
														  values, nulls)));
	}
	SRF_RETURN_DONE(funcctx);
}

/*
 * The baselines (dlock_stats_base): the counters of a lease row at the last
 * reset of its name, which the views subtract.  A reset writes these rows
 * and no lease row, so it takes no name's lock and holds back no renewal,
 * check or fenced write, however long its transaction stays open.  Resets,
 * cleanups and imports change them one after the other: each first locks
 * dlock_stats_retired in ExclusiveLock until its transaction ends.
 */

/* The counters since the last reset: *row less *base (NULL: none). */
static void
StatsSinceReset(DlockLeaseStats *s, const DlockLeaseStats *row,
				const DlockLeaseStats *base)
{
	int			i;

	*s = *row;
	if (base == NULL)
		return;
	for (i = 0; i < DLOCK_STATS_NCOUNTS; i++)
		s->count[i] -= base->count[i];
	s->wait_time -= base->wait_time;
	/* A maximum that has not grown since the reset is older than it. */
	if (row->wait_time_max <= base->wait_time_max)
		s->wait_time_max = 0;
	s->has_reset = base->has_reset;
	s->reset = base->reset;
}

/* The attribute numbers of the counters in dlock_stats_base. */
static void
StatsBaseColumns(const DlockRelations *rels, AttrNumber *att)
{
	int			i;

	for (i = 0; i < DLOCK_STATS_COLS; i++)
	{
		att[i] = get_attnum(rels->stats_base, stats_columns[i]);
		if (att[i] == InvalidAttrNumber)
			elog(ERROR, "relation \"dlock_stats_base\" has no column \"%s\"",
				 stats_columns[i]);
	}
}

/* A name whose baseline goes (StatsBaseDelete), and its row's counters. */
typedef struct StatsNameEntry
{
	char		name[DLOCK_MAX_NAME_BYTES + 1];
	DlockLeaseStats *row;		/* NULL: no row to retire */
} StatsNameEntry;

/*
 * The names of a list of text, as a set to look up, each with the counters
 * of its row from rows (a list of DlockLeaseStats pointers, or NIL).
 */
static HTAB *
StatsNameSet(List *names, List *rows)
{
	HASHCTL		ctl;
	HTAB	   *set;
	int			i;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = DLOCK_MAX_NAME_BYTES + 1;
	ctl.entrysize = sizeof(StatsNameEntry);
	ctl.hcxt = CurrentMemoryContext;
	set = hash_create("dlock names", Max(list_length(names), 16), &ctl,
					  HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	for (i = 0; i < list_length(names); i++)
	{
		StatsNameEntry *e;

		e = hash_search(set, text_to_cstring((text *) list_nth(names, i)),
						HASH_ENTER, NULL);
		e->row = rows != NIL ? (DlockLeaseStats *) list_nth(rows, i) : NULL;
	}
	return set;
}

/*
 * Delete the baselines of the names in names (a list of text), or with
 * names NIL and all every baseline, read with the latest committed state.
 * With rows (the counters of each name's row, which is being deleted), add
 * what each row counted since its name's reset to *retired.
 */
static void
StatsBaseDelete(const DlockRelations *rels, List *names, List *rows,
				bool all, DlockLeaseStats *retired)
{
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;
	AttrNumber	att[DLOCK_STATS_COLS];
	HTAB	   *set;
	HASH_SEQ_STATUS seq;
	StatsNameEntry *e;
	Datum	   *values;
	bool	   *nulls;

	if (!all && names == NIL)
		return;
	StatsBaseColumns(rels, att);
	set = StatsNameSet(names, rows);
	rel = table_open(rels->stats_base, RowExclusiveLock);
	values = palloc(RelationGetDescr(rel)->natts * sizeof(Datum));
	nulls = palloc(RelationGetDescr(rel)->natts * sizeof(bool));
	scan = systable_beginscan(rel, InvalidOid, false, SnapshotSelf, 0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		DlockLeaseStats base;

		heap_deform_tuple(tuple, RelationGetDescr(rel), values, nulls);
		e = all ? NULL : hash_search(set, TextDatumGetCString(values[0]),
									 HASH_FIND, NULL);
		if (!all && e == NULL)
			continue;
		if (e != NULL && e->row != NULL)
		{
			StatsFromValues(att, values, nulls, &base);
			StatsSinceReset(e->row, e->row, &base);
		}
		simple_heap_delete(rel, &tuple->t_self);
	}
	systable_endscan(scan);
	table_close(rel, NoLock);
	CommandCounterIncrement();
	if (retired != NULL)
	{
		hash_seq_init(&seq, set);
		while ((e = hash_seq_search(&seq)) != NULL)
			if (e->row != NULL)
				StatsAdd(retired, e->row);
	}
	hash_destroy(set);
}

/* The baseline of name into *base: false if it has none. */
static bool
StatsBaseFetch(const DlockRelations *rels, text *name, DlockLeaseStats *base)
{
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;
	ScanKeyData key;
	AttrNumber	att[DLOCK_STATS_COLS];
	Datum	   *values;
	bool	   *nulls;
	bool		found = false;

	StatsBaseColumns(rels, att);
	rel = table_open(rels->stats_base, AccessShareLock);
	values = palloc(RelationGetDescr(rel)->natts * sizeof(Datum));
	nulls = palloc(RelationGetDescr(rel)->natts * sizeof(bool));
	ScanKeyEntryInitialize(&key, 0, 1, BTEqualStrategyNumber, InvalidOid,
						   C_COLLATION_OID, F_TEXTEQ, PointerGetDatum(name));
	scan = systable_beginscan(rel, InvalidOid, false, SnapshotSelf, 1, &key);
	if (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		heap_deform_tuple(tuple, RelationGetDescr(rel), values, nulls);
		StatsFromValues(att, values, nulls, base);
		found = true;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/* Record *s, the counters of the lease row of name, as its baseline. */
static void
StatsBaseInsert(const DlockRelations *rels, text *name,
				const DlockLeaseStats *s, TimestampTz now)
{
	Relation	rel;
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot *slot;
	AttrNumber	att[DLOCK_STATS_COLS];
	DlockLeaseStats b = *s;

	StatsBaseColumns(rels, att);
	rel = table_open(rels->stats_base, RowExclusiveLock);
	estate = CreateExecutorState();
	rri = makeNode(ResultRelInfo);
	InitResultRelInfo(rri, rel, 0, NULL, 0);
	ExecOpenIndices(rri, false);
	slot = ExecInitExtraTupleSlot(estate, RelationGetDescr(rel), &TTSOpsVirtual);
	ExecClearTuple(slot);
	memset(slot->tts_isnull, true, RelationGetDescr(rel)->natts * sizeof(bool));
	b.has_reset = true;
	b.reset = now;
	StatsToValues(att, &b, slot->tts_values, slot->tts_isnull);
	slot->tts_isnull[0] = false;
	slot->tts_values[0] = PointerGetDatum(name);
	ExecStoreVirtualTuple(slot);
	ExecSimpleRelationInsert(rri, estate, slot);
	ExecCloseIndices(rri);
	ExecResetTupleTable(estate->es_tupleTable, false);
	FreeExecutorState(estate);
	table_close(rel, NoLock);
	CommandCounterIncrement();
}

/*
 * A cleanup deleted the rows of names, whose counters were rows (a list of
 * DlockLeaseStats pointers, changed here): add what each counted since its
 * name's last reset to *retired, and delete their baselines (api.c).  The
 * caller holds dlock_stats_retired in ExclusiveLock.
 */
void
StatsBaseForget(const DlockRelations *rels, List *names, List *rows,
				DlockLeaseStats *retired)
{
	if (rels->has_stats)
		StatsBaseDelete(rels, names, rows, false, retired);
}

/*
 * Reset the counters of the lease called name as at the time now: record
 * them in its baseline, and, for a name reset alone (retire), add what
 * they counted since the last reset to the retired row first, so that
 * totals do not go down.  The row is read once, with the latest committed
 * state: a renewal committed after that read counts after the reset.  No
 * lease row is written and no name's lock taken.
 */
static void
StatsResetName(const DlockRelations *rels, text *name, TimestampTz now,
			   bool retire)
{
	DlockLease	lease;
	DlockLeaseStats base;
	DlockLeaseStats since;
	bool		has_base;
	List	   *one = list_make1(name);

	LeaseFetchSettled(rels, name, &lease);
	has_base = StatsBaseFetch(rels, name, &base);
	if (lease.found && retire)
	{
		StatsSinceReset(&since, &lease.stats, has_base ? &base : NULL);
		StatsRetire(rels, &since, 0);
	}
	if (has_base)
		StatsBaseDelete(rels, one, NIL, false, NULL);
	if (lease.found)
		StatsBaseInsert(rels, name, &lease.stats, now);
	if (retire)
		StatsResetShared(name);
}

/*
 * Reset every name: zero the retired row, drop every baseline, and record
 * each lease row's counters, read in one scan with the latest committed
 * state, as its new one.
 */
static void
StatsResetAll(const DlockRelations *rels, TimestampTz now)
{
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;
	Datum	   *values;
	bool	   *nulls;

	StatsRetire(rels, NULL, now);
	StatsBaseDelete(rels, NIL, NIL, true, NULL);
	rel = DlockOpenLeaseTable(rels, AccessShareLock);
	values = palloc(RelationGetDescr(rel)->natts * sizeof(Datum));
	nulls = palloc(RelationGetDescr(rel)->natts * sizeof(bool));
	scan = systable_beginscan(rel, InvalidOid, false, SnapshotSelf, 0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		DlockLeaseStats row;
		text	   *name;

		heap_deform_tuple(tuple, RelationGetDescr(rel), values, nulls);
		StatsFromValues(rels->stats_att, values, nulls, &row);
		name = DatumGetTextPCopy(values[Anum_dlock_lease_name - 1]);
		StatsBaseInsert(rels, name, &row, now);
		CHECK_FOR_INTERRUPTS();
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	StatsResetShared(NULL);
}

/*
 * dlock_stats_reset(name): zero the counters of one name, or with NULL of
 * every name, the totals and the shared counters of this database.
 */
Datum
dlock_stats_reset(PG_FUNCTION_ARGS)
{
	const DlockRelations *rels;
	TimestampTz now = GetCurrentTimestamp();

	PreventCommandIfReadOnly("dlock_stats_reset()");
	rels = DlockGetRelations(fcinfo);
	if (!rels->has_stats)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the dlock extension's objects have no counters"),
				 errhint("Run ALTER EXTENSION dlock UPDATE.")));
	/* One reset, cleanup or import at a time (see StatsBaseDelete). */
	XactLockRelation(rels->stats_retired, ExclusiveLock);
	if (!PG_ARGISNULL(0))
	{
		text	   *name = DlockNameArg(fcinfo, 0);

		StatsResetName(rels, name, now, true);
	}
	else
		StatsResetAll(rels, now);
	PG_RETURN_VOID();
}
