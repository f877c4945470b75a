/*-------------------------------------------------------------------------
 *
 * waiters.c
 *		dlock_waiters: who waits for a lease, and who pins one.
 *
 * Read from the lock manager (GetLockStatusData, what pg_locks shows):
 * the holder of a name's queue lock is the head of its waiting acquires,
 * the backends waiting for that lock are the rest of the queue, and a
 * backend holding a name's check protection (DLOCK_LOCK_CHECK) keeps the
 * lease from changing hands (src/README, "Locks").  Names are matched to
 * lock keys through the lease table, so the keys themselves are never
 * shown.  This function gives each waiting acquire its place in the
 * queue (from the wait's start, also where the caller may not see it) and
 * shows no pid or time the view would hide; the view (dlock--1.1--1.2.sql)
 * adds the backends' roles and states from pg_stat_activity and the
 * lease's expiry; with shared_preload_libraries, the since and
 * deadline of every waiting acquire come from stats.c.
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "dlock.h"

PG_FUNCTION_INFO_V1(dlock_waiters_locks);

/* A lock key of this database, and the lease name it belongs to. */
typedef struct KeyName
{
	uint32		key[2];			/* locktag_field2, locktag_field3 */
	text	   *name;
} KeyName;

/* The names of every lease row, by their lock keys. */
static HTAB *
WaitersKeyNames(const DlockRelations *rels)
{
	HASHCTL		info;
	HTAB	   *keys;
	List	   *names = LeaseListAll(rels);
	ListCell   *lc;

	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(uint32) * 2;
	info.entrysize = sizeof(KeyName);
	info.hcxt = CurrentMemoryContext;
	keys = hash_create("dlock_waiters keys", Max(list_length(names), 16),
					   &info, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	foreach(lc, names)
	{
		LOCKTAG		tag;
		uint32		key[2];
		KeyName    *e;

		NameLockTag((text *) lfirst(lc), &tag);
		key[0] = tag.locktag_field2;
		key[1] = tag.locktag_field3;
		e = hash_search(keys, key, HASH_ENTER, NULL);
		e->name = (text *) lfirst(lc);
	}
	return keys;
}

/*
 * May the current role see which backend pid waits or pins, and since
 * when: pg_stat_activity's rule for its state, query and start times (the
 * privileges of the backend's role or of pg_read_all_stats, compat.h; a
 * NOINHERIT member has them only after SET ROLE: attack4 F6).  pg_locks
 * shows every pid and waitstart, but by lock key, which only the library
 * maps to names: a hidden row shows neither its pid nor its times, which
 * would match pg_locks.waitstart (attack4 F5).
 */
static bool
WaitersMaySee(int pid)
{
	PGPROC	   *proc = BackendPidGetProc(pid);
	Oid			role;

	if (proc == NULL)
		return false;			/* gone meanwhile */
	role = proc->roleId;
	return OidIsValid(role) && DlockHasPgstatPermissions(role);
}

/* One row of the result, before the queue positions are known. */
typedef struct WaitersEntry
{
	Datum		values[7];
	bool		nulls[7];
	uint32		key[2];			/* the name's lock key */
	bool		waiting;		/* kind 'waiting' */
	bool		head;
	TimestampTz start;			/* the wait's start, hidden or not; 0: unknown */
	int			pid;
} WaitersEntry;

/* One row of the result, from one lock of the lock manager. */
static bool
WaitersRow(HTAB *keys, const LockInstanceData *inst, WaitersEntry *row)
{
	const LOCKTAG *tag = &inst->locktag;
	Datum	   *values = row->values;
	bool	   *nulls = row->nulls;
	KeyName    *e;
	bool		head;
	TimestampTz start = 0;
	TimestampTz deadline = 0;
	bool		known = false;

	if (tag->locktag_type != LOCKTAG_ADVISORY ||
		tag->locktag_field1 != MyDatabaseId)
		return false;
	row->key[0] = tag->locktag_field2;
	row->key[1] = tag->locktag_field3;
	if (tag->locktag_field4 == DLOCK_LOCKTAG_WAITERS)
	{
		head = (inst->holdMask & LOCKBIT_ON(DLOCK_LOCK_QUEUE)) != 0;
		if (!head && inst->waitLockMode != DLOCK_LOCK_QUEUE)
			return false;
	}
	else if (tag->locktag_field4 == DLOCK_LOCKTAG_NAME)
	{
		if ((inst->holdMask & LOCKBIT_ON(DLOCK_LOCK_CHECK)) == 0)
			return false;
		head = false;
	}
	else
		return false;
	/* NULL: a name whose first acquire has not committed yet */
	e = hash_search(keys, row->key, HASH_FIND, NULL);

	memset(nulls, true, 7 * sizeof(bool));
	nulls[1] = nulls[2] = nulls[3] = false;
	nulls[0] = e == NULL;
	values[0] = e == NULL ? (Datum) 0 : PointerGetDatum(e->name);
	row->waiting = tag->locktag_field4 == DLOCK_LOCKTAG_WAITERS;
	values[1] = CStringGetTextDatum(row->waiting ? "waiting" : "pinning");
	row->head = head;
	row->pid = inst->pid;
	if (row->waiting)
	{
		if (StatsWaitOf(inst->pid, &start, &deadline))
			known = true;
		else if (!head && inst->waitStart != 0)
			start = inst->waitStart;
	}
	row->start = start;
	/* Which backend, and since when: only for those the caller may see. */
	nulls[2] = !WaitersMaySee(inst->pid);
	values[2] = Int32GetDatum(inst->pid);
	values[3] = BoolGetDatum(head);
	if (row->waiting && !nulls[2] && start != 0)
	{
		nulls[4] = false;
		values[4] = TimestampTzGetDatum(start);
		if (known)
		{
			nulls[5] = false;
			values[5] = TimestampTzGetDatum(deadline);
		}
	}
	return true;
}

/*
 * Queue order: by name, the head first, then by the wait's start (the
 * order the lock manager serves), then by pid; a wait whose start is not
 * known yet (0) comes last.  The times are compared whether the caller
 * may see them or not, so a hidden waiter keeps its place.
 */
static int
WaitersCompare(const void *a, const void *b)
{
	const WaitersEntry *x = *(const WaitersEntry *const *) a;
	const WaitersEntry *y = *(const WaitersEntry *const *) b;

	if (x->key[0] != y->key[0])
		return x->key[0] < y->key[0] ? -1 : 1;
	if (x->key[1] != y->key[1])
		return x->key[1] < y->key[1] ? -1 : 1;
	if (x->head != y->head)
		return x->head ? -1 : 1;
	if (x->start != y->start)
	{
		if (x->start == 0 || y->start == 0)
			return x->start == 0 ? 1 : -1;
		return x->start < y->start ? -1 : 1;
	}
	return x->pid < y->pid ? -1 : (x->pid > y->pid ? 1 : 0);
}

/*
 * dlock_waiters_locks(): one row per waiting acquire (kind 'waiting'; head
 * true for the one that holds the queue lock) and per backend holding a
 * name's check protection (kind 'pinning', whether the lease is held or
 * not: the view keeps those of leases no longer held), with the wait's
 * start and deadline where known and the caller may see them, and each
 * waiting acquire's position in its name's queue (WaitersCompare).
 */
Datum
dlock_waiters_locks(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const DlockRelations *rels = DlockGetRelations(fcinfo);
	TupleDesc	desc;
	Tuplestorestate *store;
	MemoryContext old;
	HTAB	   *keys;
	LockData   *locks;
	WaitersEntry *rows;
	WaitersEntry **waiting;
	int			nrows = 0;
	int			nwaiting = 0;
	int32		position = 0;
	int			i;

	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo) ||
		(rsinfo->allowedModes & SFRM_Materialize) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("set-valued function called in context that cannot accept a set")));
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	keys = WaitersKeyNames(rels);
	locks = GetLockStatusData();
	rows = palloc(sizeof(WaitersEntry) * Max(locks->nelements, 1));
	waiting = palloc(sizeof(WaitersEntry *) * Max(locks->nelements, 1));
	for (i = 0; i < locks->nelements; i++)
	{
		WaitersEntry *row = &rows[nrows];

		if (!WaitersRow(keys, &locks->locks[i], row))
			continue;
		nrows++;
		if (row->waiting)
			waiting[nwaiting++] = row;
	}
	/* Each waiting acquire's place in its name's queue, 1 for the head. */
	qsort(waiting, nwaiting, sizeof(WaitersEntry *), WaitersCompare);
	for (i = 0; i < nwaiting; i++)
	{
		WaitersEntry *row = waiting[i];

		if (i == 0 || row->key[0] != waiting[i - 1]->key[0] ||
			row->key[1] != waiting[i - 1]->key[1])
			position = 0;
		row->nulls[6] = false;
		row->values[6] = Int32GetDatum(++position);
	}

	old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	desc = CreateTupleDescCopy(desc);
	store = tuplestore_begin_heap(true, false, work_mem);
	MemoryContextSwitchTo(old);
	for (i = 0; i < nrows; i++)
		tuplestore_putvalues(store, desc, rows[i].values, rows[i].nulls);
	rsinfo->returnMode = SFRM_Materialize;
	rsinfo->setResult = store;
	rsinfo->setDesc = desc;
	return (Datum) 0;
}
