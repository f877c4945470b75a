/*-------------------------------------------------------------------------
 *
 * lease.c
 *		Reading and writing lease rows of @extschema@.dlock_lease.
 *
 * Reads use SnapshotSelf: the latest committed version of the row plus this
 * transaction's own changes, whatever the caller's isolation level.  No
 * predicate locks are taken for it, so SERIALIZABLE callers get no
 * serialization failures from dlock's own reads.
 *
 * Writes go through the executor's routines for simple inserts and updates
 * (those of logical replication's apply worker): every index of the table is
 * maintained, including expression and partial indexes a superuser may have
 * added, check constraints are enforced, and an update that changes no
 * indexed column stays HOT.  Triggers on the table are refused with a clear
 * error rather than fired: a trigger could change a lease behind dlock's
 * back.  Row-level security policies do not apply to dlock's own reads and
 * writes (as they do not to a table owner's), only to queries of the table.
 *
 * The caller of a write holds DLOCK_LOCK_STATE on the name (see src/README, "Locks"), so
 * nobody else changes the row meanwhile, and has fetched it with
 * LeaseFetchForUpdate, whose table lock keeps the row's TID valid until the
 * transaction ends.
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_authid.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/procarray.h"
#include "nodes/execnodes.h"
#include "nodes/pg_list.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "compat.h"
#include "dlock.h"

/*
 * A duration column of the lease row (min_hold, lock_delay) in microseconds,
 * a day counted as 24 hours: -1 when NULL or when the table has no such
 * column (attnum 0).  dlock writes these as a plain time, never negative.
 */
static int64
LeaseIntervalColumn(AttrNumber attnum, Datum *values, bool *nulls)
{
	Interval   *span;

	if (attnum <= 0 || nulls[attnum - 1])
		return -1;
	span = DatumGetIntervalP(values[attnum - 1]);
	return Max(span->time + (int64) span->day * USECS_PER_DAY +
			   (int64) span->month * DAYS_PER_MONTH * USECS_PER_DAY, 0);
}

/* Store a duration of *lease (-1: NULL) into the column attnum, if any. */
static void
LeaseIntervalToSlot(AttrNumber attnum, int64 usecs, Datum *values,
					bool *nulls)
{
	Interval   *span;

	if (attnum <= 0 || usecs < 0)
		return;
	span = (Interval *) palloc0(sizeof(Interval));
	span->time = usecs;
	nulls[attnum - 1] = false;
	values[attnum - 1] = IntervalPGetDatum(span);
}

/* Fill *lease from a lease row. */
static void
LeaseFromTuple(Relation rel, HeapTuple tuple, const DlockRelations *rels,
			   DlockLease *lease)
{
	TupleDesc	desc = RelationGetDescr(rel);
	Datum	   *values = palloc(desc->natts * sizeof(Datum));
	bool	   *nulls = palloc(desc->natts * sizeof(bool));

	heap_deform_tuple(tuple, desc, values, nulls);

	lease->found = true;
	lease->tid = tuple->t_self;
	lease->token = DatumGetInt64(values[Anum_dlock_lease_token - 1]);
	lease->owner = nulls[Anum_dlock_lease_owner - 1] ? NULL :
		TextDatumGetCString(values[Anum_dlock_lease_owner - 1]);
	namestrcpy(&lease->role,
			   NameStr(*DatumGetName(values[Anum_dlock_lease_role - 1])));
	lease->acquired_at =
		DatumGetTimestampTz(values[Anum_dlock_lease_acquired_at - 1]);
	lease->expires_at =
		DatumGetTimestampTz(values[Anum_dlock_lease_expires_at - 1]);
	lease->released = !nulls[Anum_dlock_lease_released_at - 1];
	if (lease->released)
		lease->released_at =
			DatumGetTimestampTz(values[Anum_dlock_lease_released_at - 1]);
	lease->role_oid = InvalidOid;
	lease->role_sysid = 0;
	if (rels->has_role_oid && !nulls[Anum_dlock_lease_role_oid - 1] &&
		!nulls[Anum_dlock_lease_role_sysid - 1])
	{
		lease->role_oid =
			DatumGetObjectId(values[Anum_dlock_lease_role_oid - 1]);
		lease->role_sysid =
			DatumGetInt64(values[Anum_dlock_lease_role_sysid - 1]);
	}
	if (rels->has_stats)
		StatsFromValues(rels->stats_att, values, nulls, &lease->stats);
	else
		memset(&lease->stats, 0, sizeof(lease->stats));
	lease->min_hold = LeaseIntervalColumn(rels->att_min_hold, values, nulls);
	lease->lock_delay = LeaseIntervalColumn(rels->att_lock_delay, values,
											nulls);
	lease->pin_grace = LeaseIntervalColumn(rels->att_pin_grace, values,
										   nulls);
	pfree(values);
	pfree(nulls);

	/* Written by this transaction, or being deleted by another one? */
	lease->mine = TransactionIdIsCurrentTransactionId(
		HeapTupleHeaderGetXmin(tuple->t_data));
	lease->deleter = InvalidTransactionId;
	if (!(tuple->t_data->t_infomask & HEAP_XMAX_INVALID) &&
		!HEAP_XMAX_IS_LOCKED_ONLY(tuple->t_data->t_infomask))
	{
		TransactionId xmax = HeapTupleHeaderGetUpdateXid(tuple->t_data);

		if (TransactionIdIsValid(xmax) &&
			!TransactionIdIsCurrentTransactionId(xmax) &&
			TransactionIdIsInProgress(xmax))
			lease->deleter = xmax;
	}
}

/*
 * Where the lease row of a name was last seen, per backend: a small table
 * indexed by a hash of the name, filled by every index lookup and every
 * write.  An entry is only a hint: LeaseLookupCached reads the row version
 * at that address and takes it only if it is the name's lease and the
 * version SnapshotSelf sees, which is then the one the index lookup would
 * find (under the unique index, a name has one such version at a time).
 * Anything else (another backend's change moved the row, cleanup deleted
 * it, VACUUM FULL, TRUNCATE or VACUUM's truncation rewrote or shrank the
 * table, another name's row, another lease table after DROP and CREATE
 * EXTENSION) falls back to the index lookup, which refreshes the entry.
 *
 * The page is read only through the buffer that held it last time
 * (ReadRecentBuffer): if that buffer no longer holds the page, the page is
 * not known to exist without a system call, and the index is used.  So a
 * repeated look at the same name (a busy acquire, a check, the release of a
 * lease this backend acquired, the write after a look under the state lock)
 * costs no index descent.
 */
#define LEASE_ROW_CACHE_SIZE	64

typedef struct LeaseRowCacheEntry
{
	Oid			lease_table;	/* InvalidOid: empty */
	uint64		hash;			/* of the name (NameHash) */
	ItemPointerData tid;		/* the row version last seen */
	Buffer		buffer;			/* the buffer that held it then, if known */
} LeaseRowCacheEntry;

static LeaseRowCacheEntry lease_row_cache[LEASE_ROW_CACHE_SIZE];

/*
 * Addresses are remembered and read only in a heap (the table's access
 * method as created; a superuser could change it with ALTER TABLE ... SET
 * ACCESS METHOD, whose row addresses need not be heap pages).
 */
#define LeaseRowCacheUsable(rel) ((rel)->rd_rel->relam == HEAP_TABLE_AM_OID)

/* The cache entry of name, and the name's hash. */
static LeaseRowCacheEntry *
LeaseRowCacheEntryOf(text *name, uint64 *hash)
{
	*hash = NameHash(name);
	return &lease_row_cache[*hash % LEASE_ROW_CACHE_SIZE];
}

/* Remember where the lease called name (hash) was seen. */
static void
LeaseRowCacheRemember(LeaseRowCacheEntry *e, Oid lease_table, uint64 hash,
					  ItemPointer tid, Buffer buffer)
{
	e->lease_table = lease_table;
	e->hash = hash;
	e->tid = *tid;
	e->buffer = buffer;
}

/*
 * After a write by this transaction (which holds a lock on the table that
 * keeps it from shrinking): the name's new row version is at tid.  Its
 * buffer is the old version's if the page is the same (a HOT update), else
 * looked up once here (a buffer lookup, much cheaper than an index descent).
 */
static void
LeaseRemember(Relation rel, text *name, ItemPointer tid)
{
	uint64		hash;
	LeaseRowCacheEntry *e;
	Buffer		buffer;

	if (!LeaseRowCacheUsable(rel))
		return;
	e = LeaseRowCacheEntryOf(name, &hash);
	if (e->lease_table == RelationGetRelid(rel) && e->hash == hash &&
		BufferIsValid(e->buffer) &&
		ItemPointerGetBlockNumber(&e->tid) == ItemPointerGetBlockNumber(tid))
		buffer = e->buffer;
	else
	{
		buffer = ReadBuffer(rel, ItemPointerGetBlockNumber(tid));
		ReleaseBuffer(buffer);
	}
	LeaseRowCacheRemember(e, RelationGetRelid(rel), hash, tid, buffer);
}

/*
 * Fill *lease from the row version at the address the cache entry gives:
 * true if that version is the lease called name and SnapshotSelf sees it,
 * false (nothing filled) if not, or if the page is not in the buffer that
 * last held it.
 */
static bool
LeaseLookupCached(const DlockRelations *rels, Relation rel, text *name,
				  const LeaseRowCacheEntry *e, uint64 hash, DlockLease *lease)
{
	Buffer		buf = e->buffer;
	HeapTuple	copy = NULL;
	Page		page;
	OffsetNumber off;
	bool		isnull;
	Datum		rowname;
	bool		found = false;

	if (!LeaseRowCacheUsable(rel) ||
		e->lease_table != RelationGetRelid(rel) || e->hash != hash ||
		!BufferIsValid(buf) ||
		!ReadRecentBuffer(DlockRelFileLocator(rel), MAIN_FORKNUM,
						  ItemPointerGetBlockNumber(&e->tid), buf))
		return false;

	/* What heap_fetch does, on the page pinned already. */
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	off = ItemPointerGetOffsetNumber(&e->tid);
	if (off >= FirstOffsetNumber && off <= PageGetMaxOffsetNumber(page))
	{
		ItemId		lp = PageGetItemId(page, off);

		if (ItemIdIsNormal(lp))
		{
			HeapTupleData tuple;

			tuple.t_data = (HeapTupleHeader) PageGetItem(page, lp);
			tuple.t_len = ItemIdGetLength(lp);
			tuple.t_tableOid = RelationGetRelid(rel);
			tuple.t_self = e->tid;
			if (HeapTupleSatisfiesVisibility(&tuple, SnapshotSelf, buf))
				copy = heap_copytuple(&tuple);
		}
	}
	LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	ReleaseBuffer(buf);

	if (copy == NULL)
		return false;
	rowname = heap_getattr(copy, Anum_dlock_lease_name, RelationGetDescr(rel),
						   &isnull);
	if (!isnull && DlockNamesEqual(DatumGetTextPP(rowname), name))
	{
		memset(lease, 0, sizeof(DlockLease));
		LeaseFromTuple(rel, copy, rels, lease);
		found = true;
	}
	heap_freetuple(copy);
	return found;
}

/*
 * Lock the primary key of rel for one index lookup, as the relation cache
 * knows it once the lock is held (a REINDEX CONCURRENTLY may have replaced
 * it meanwhile), waiting no longer than the deadline of w (NULL: as long as
 * it takes): a non-concurrent REINDEX holds the index until its transaction
 * ends.  InvalidOid when the deadline came first.
 */
static Oid
LeaseLockIndex(Relation rel, const DlockWait *w)
{
	for (;;)
	{
		Oid			indexoid = DlockLeaseIndex(rel);

		if (!WaitForRelationLockMode(indexoid, AccessShareLock, w))
			return InvalidOid;
		if (DlockLeaseIndex(rel) == indexoid)
			return indexoid;
		RelationLockGiveBackMode(indexoid, AccessShareLock);
	}
}

/*
 * Look the lease called name up in rel, opened by the caller: at its last
 * known address, else by the index, whose lock is waited for no longer
 * than the deadline of w (NULL: as long as it takes).  False, with nothing
 * looked up, when the deadline came first.
 */
static bool
LeaseLookup(const DlockRelations *rels, Relation rel, text *name,
			DlockLease *lease, const DlockWait *w)
{
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	uint64		hash;
	LeaseRowCacheEntry *e = LeaseRowCacheEntryOf(name, &hash);
	Oid			indexoid;

	/*
	 * The primary key is what makes a remembered row version the name's
	 * only one: without it, no lookup is answered, remembered or not.
	 */
	(void) DlockLeaseIndex(rel);

	if (LeaseLookupCached(rels, rel, name, e, hash, lease))
		return true;

	indexoid = LeaseLockIndex(rel, w);
	if (!OidIsValid(indexoid))
		return false;
	memset(lease, 0, sizeof(DlockLease));
	ScanKeyInit(&key, Anum_dlock_lease_name, BTEqualStrategyNumber,
				F_TEXTEQ, PointerGetDatum(name));
	scan = systable_beginscan(rel, indexoid, true, SnapshotSelf,
							  1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		LeaseFromTuple(rel, tuple, rels, lease);
		LeaseRowCacheRemember(e, RelationGetRelid(rel), hash, &lease->tid,
							  TTS_IS_BUFFERTUPLE(scan->slot) ?
							  ((BufferHeapTupleTableSlot *) scan->slot)->buffer :
							  InvalidBuffer);
	}
	else if (e->hash == hash)
		e->lease_table = InvalidOid;	/* the name has no row now */
	systable_endscan(scan);
	RelationLockGiveBackMode(indexoid, AccessShareLock);
	return true;
}

/*
 * Fill *lease with the latest committed state of the lease called name, to
 * look at only: the table lock is given back at once, so the row may move
 * (VACUUM FULL) and its TID must not be used for a write.
 */
void
LeaseFetch(const DlockRelations *rels, text *name, DlockLease *lease)
{
	Relation	rel = DlockOpenLeaseTable(rels, AccessShareLock);

	(void) LeaseLookup(rels, rel, name, lease, NULL);
	table_close(rel, AccessShareLock);
}

/*
 * LeaseFetch for a caller that already holds a lock on the lease table
 * (acquire.c takes it bounded by its deadline, WaitForRelationLock): the
 * table is opened without taking the lock once more, and the index's lock
 * is waited for no longer than the deadline of w either.  False, with
 * nothing looked up, when the deadline came first.
 */
bool
LeaseFetchLocked(const DlockRelations *rels, text *name, DlockLease *lease,
				 const DlockWait *w)
{
	Relation	rel = DlockOpenLeaseTable(rels, NoLock);
	bool		looked;

	looked = LeaseLookup(rels, rel, name, lease, w);
	table_close(rel, NoLock);
	return looked;
}

/*
 * LeaseFetch for a caller that decides without the name's lock when the
 * lease is held (api.c, fence.c).  A lookup that finds no row is made once
 * more: an index scan that races a non-HOT update of the row can miss both
 * of its versions, but a scan that starts after that update committed finds
 * the new one.  A version that is found is the latest committed one when it
 * is read.
 */
void
LeaseFetchSettled(const DlockRelations *rels, text *name, DlockLease *lease)
{
	LeaseFetch(rels, name, lease);
	if (!lease->found)
		LeaseFetch(rels, name, lease);
}

/*
 * LeaseFetch for a write: the table lock is kept until the transaction
 * ends, so that the row's TID stays valid for LeaseStore and LeaseDelete.
 * A row that another transaction is deleting (dlock_cleanup gives the name's
 * lock back after each row) is waited for, then looked up again, so a write
 * never fails on it.
 */
void
LeaseFetchForUpdate(const DlockRelations *rels, text *name, DlockLease *lease)
{
	(void) LeaseFetchForUpdateWithin(rels, name, lease, NULL);
}

/*
 * LeaseFetchForUpdate waiting no longer than the deadline of w (with w
 * NULL, as long as it takes) for everything the write needs: the table's
 * lock and its indexes' (a REINDEX or an ALTER holds them), the index
 * lookup, and a transaction that is deleting the row.  False when the
 * deadline came first, and *lease is then not to be written.  Locks taken
 * for the write are kept until the transaction ends, as the write's own.
 */
bool
LeaseFetchForUpdateWithin(const DlockRelations *rels, text *name,
						  DlockLease *lease, const DlockWait *w)
{
	Relation	rel;

	if (w != NULL &&
		!WaitForRelationLockMode(rels->lease_table, RowExclusiveLock, w))
		return false;
	rel = DlockOpenLeaseTable(rels, RowExclusiveLock);
	if (w != NULL && !WaitForIndexLocks(rel, w))
	{
		table_close(rel, NoLock);
		return false;
	}
	for (;;)
	{
		TransactionId deleter;
		ItemPointerData tid;

		if (!LeaseLookup(rels, rel, name, lease, w))
		{
			table_close(rel, NoLock);
			return false;
		}
		if (!lease->found || !TransactionIdIsValid(lease->deleter))
			break;
		deleter = lease->deleter;
		tid = lease->tid;
		if (w == NULL)
			XactLockTableWait(deleter, rel, &tid, XLTW_None);
		else if (!WaitForXact(deleter, w))
		{
			table_close(rel, NoLock);
			return false;
		}
	}
	lease->for_update = true;
	table_close(rel, NoLock);
	return true;
}

/* Is the lease held by somebody at the time now? */
bool
LeaseIsHeld(const DlockLease *lease, TimestampTz now)
{
	return lease->found && !lease->released && lease->expires_at > now;
}

/*
 * When the name can next be taken (src/README, "The lease state machine"):
 * after a release, at acquired_at + min_hold (or at once); after an expiry
 * without a release, at the later of expires_at + lock_delay and
 * acquired_at + min_hold (a renewal with a short ttl does not shorten the
 * minimum hold).  For a held lease, the earliest time it could be.
 */
TimestampTz
LeaseAvailableAt(const DlockLease *lease)
{
	TimestampTz hold_end = lease->min_hold > 0 ?
		lease->acquired_at + lease->min_hold : DT_NOBEGIN;

	if (lease->released)
		return Max(lease->released_at, hold_end);
	return Max(lease->expires_at + Max(lease->lock_delay, 0), hold_end);
}

/*
 * When a waiting acquire may end the transactions that still hold the
 * check protection of this (no longer held) lease: its release or expiry
 * plus the pin grace stored with it.  False when they are never ended (no
 * grace recorded: a row written before 1.2, or dlock.pin_grace -1).
 */
bool
LeasePinEnd(const DlockLease *lease, TimestampTz *pin_end)
{
	/* a lease never committed has nobody's check protection to bound */
	if (!lease->found || lease->pin_grace < 0)
		return false;
	*pin_end = (lease->released ? lease->released_at : lease->expires_at) +
		lease->pin_grace;
	return true;
}

/*
 * May nobody take the name at the time now: it is held, or inside its
 * minimum hold (released or expired before acquired_at + min_hold), or
 * expired without a release less than its lock-delay ago.  A released lease is never busy for a clock that stepped
 * back behind its release.
 */
bool
LeaseIsBusy(const DlockLease *lease, TimestampTz now)
{
	if (!lease->found)
		return false;
	if (lease->min_hold > 0 && now < lease->acquired_at + lease->min_hold)
		return true;
	if (lease->released)
		return false;
	return now < lease->expires_at + Max(lease->lock_delay, 0);
}

/*
 * The holder role of a lease, or InvalidOid if that role no longer exists.
 * The recorded OID decides in the cluster where it was recorded; elsewhere
 * (a restored dump, pg_upgrade) and for 1.0 rows, the recorded name does.
 */
Oid
LeaseHolder(const DlockLease *lease)
{
	if (lease->role_sysid != 0 &&
		(uint64) lease->role_sysid == GetSystemIdentifier())
	{
		if (OidIsValid(lease->role_oid) &&
			SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(lease->role_oid)))
			return lease->role_oid;
		return InvalidOid;
	}
	return get_role_oid(NameStr(lease->role), true);
}

/*
 * May role act for the holder of the lease: is it that role, a member of
 * it, or a superuser?  The leases of a role that no longer exists are left
 * to superusers.
 */
bool
LeaseRoleActsForHolder(const DlockLease *lease, Oid role)
{
	Oid			holder = LeaseHolder(lease);

	if (OidIsValid(holder))
		return has_privs_of_role(role, holder);
	return superuser_arg(role);
}

/* May the current user act for the holder of the lease? */
bool
LeaseCallerActsForHolder(const DlockLease *lease)
{
	return LeaseRoleActsForHolder(lease, GetUserId());
}

/* Refuse to write a table that has triggers: they could change a lease. */
static void
LeaseCheckNoTriggers(Relation rel)
{
	if (rel->trigdesc != NULL && rel->trigdesc->numtriggers > 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("relation \"%s\" of extension \"dlock\" must not have triggers",
						RelationGetRelationName(rel)),
				 errdetail("A trigger on the lease table could change leases behind dlock's back."),
				 errhint("Drop the trigger \"%s\".",
						 rel->trigdesc->triggers[0].tgname)));
}

/* The values of the row that *lease describes, into slot. */
static void
LeaseToSlot(const DlockRelations *rels, text *name, const DlockLease *lease,
			TupleTableSlot *slot)
{
	Datum	   *values = slot->tts_values;
	bool	   *nulls = slot->tts_isnull;

	ExecClearTuple(slot);
	memset(nulls, true, slot->tts_tupleDescriptor->natts * sizeof(bool));
	nulls[Anum_dlock_lease_name - 1] = false;
	values[Anum_dlock_lease_name - 1] = PointerGetDatum(name);
	nulls[Anum_dlock_lease_token - 1] = false;
	values[Anum_dlock_lease_token - 1] = Int64GetDatum(lease->token);
	if (lease->owner)
	{
		nulls[Anum_dlock_lease_owner - 1] = false;
		values[Anum_dlock_lease_owner - 1] = CStringGetTextDatum(lease->owner);
	}
	nulls[Anum_dlock_lease_role - 1] = false;
	values[Anum_dlock_lease_role - 1] = NameGetDatum(&lease->role);
	nulls[Anum_dlock_lease_acquired_at - 1] = false;
	values[Anum_dlock_lease_acquired_at - 1] =
		TimestampTzGetDatum(lease->acquired_at);
	nulls[Anum_dlock_lease_expires_at - 1] = false;
	values[Anum_dlock_lease_expires_at - 1] =
		TimestampTzGetDatum(lease->expires_at);
	if (lease->released)
	{
		nulls[Anum_dlock_lease_released_at - 1] = false;
		values[Anum_dlock_lease_released_at - 1] =
			TimestampTzGetDatum(lease->released_at);
	}
	if (rels->has_role_oid)
	{
		nulls[Anum_dlock_lease_role_oid - 1] = false;
		values[Anum_dlock_lease_role_oid - 1] =
			ObjectIdGetDatum(lease->role_oid);
		nulls[Anum_dlock_lease_role_sysid - 1] = false;
		values[Anum_dlock_lease_role_sysid - 1] =
			Int64GetDatum(lease->role_sysid);
	}
	if (rels->has_stats)
		StatsToValues(rels->stats_att, &lease->stats, values, nulls);
	LeaseIntervalToSlot(rels->att_min_hold, lease->min_hold, values, nulls);
	LeaseIntervalToSlot(rels->att_lock_delay, lease->lock_delay, values,
						nulls);
	LeaseIntervalToSlot(rels->att_pin_grace, lease->pin_grace, values,
						nulls);
	ExecStoreVirtualTuple(slot);
}

/*
 * Record the holder as this cluster sees it: its OID and our system
 * identifier (a restored row is re-bound by name here), and its current name.
 */
static void
LeaseBindHolder(DlockLease *lease, Oid holder)
{
	lease->role_oid = holder;
	lease->role_sysid = (int64) GetSystemIdentifier();
	if (OidIsValid(holder))
	{
		char	   *rolname = GetUserNameFromId(holder, true);

		if (rolname != NULL)
			namestrcpy(&lease->role, rolname);
	}
}

/*
 * Write *lease as the new state of the row called name: an update of the
 * version that was fetched, or an insert for a name never seen before,
 * with the executor's index maintenance.
 */
static void
LeaseStore(const DlockRelations *rels, text *name, DlockLease *lease)
{
	Relation	rel;
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot *slot;
	bool		is_update = ItemPointerIsValid(&lease->tid);

	if (!lease->for_update)
		elog(ERROR, "dlock lease written without LeaseFetchForUpdate");

	/* Already locked by LeaseFetchForUpdate, until the transaction ends. */
	rel = DlockOpenLeaseTable(rels, RowExclusiveLock);
	LeaseCheckNoTriggers(rel);

	estate = CreateExecutorState();
	rri = makeNode(ResultRelInfo);
	InitResultRelInfo(rri, rel, 0, NULL, 0);
	ExecOpenIndices(rri, false);
	slot = ExecInitExtraTupleSlot(estate, RelationGetDescr(rel),
								  &TTSOpsVirtual);
	LeaseToSlot(rels, name, lease, slot);

	if (is_update)
	{
		TupleTableSlot *searchslot;

		searchslot = ExecInitExtraTupleSlot(estate, RelationGetDescr(rel),
											&TTSOpsVirtual);
		searchslot->tts_tid = lease->tid;
		ExecSimpleRelationUpdate(rri, estate, NULL, searchslot, slot);
	}
	else
		ExecSimpleRelationInsert(rri, estate, slot);

	lease->found = true;
	lease->tid = slot->tts_tid;
	LeaseRemember(rel, name, &lease->tid);

	ExecCloseIndices(rri);
	ExecResetTupleTable(estate->es_tupleTable, false);
	FreeExecutorState(estate);
	table_close(rel, NoLock);

	/* Later calls in this same statement must see the new version. */
	CommandCounterIncrement();
}

/* dlock.pin_grace of this (the holder's) session, as stored: -1 for never. */
static int64
LeasePinGraceSetting(void)
{
	return dlock_pin_grace < 0 ? -1 : (int64) dlock_pin_grace * 1000;
}

/*
 * Hand the lease to a new holder (the current role) with the given token.
 * The old state in *lease tells the event: a free name (no row, or
 * released) is acquired, an expired unreleased lease is taken over (and
 * counted as a lost lease: stats.c).
 */
void
LeaseWriteNew(const DlockRelations *rels, text *name, DlockLease *lease,
			  int64 token, const char *owner, TimestampTz now,
			  TimestampTz expires_at, int64 min_hold, int64 lock_delay)
{
	bool		takeover = lease->found && !lease->released;

	DlockEventLease(name, takeover ?
					DLOCK_EVENT_TAKEN_OVER : DLOCK_EVENT_ACQUIRED, token, owner);
	lease->stats.count[DLOCK_STATS_ACQUISITIONS]++;
	if (takeover)
	{
		lease->stats.count[DLOCK_STATS_TAKEOVERS]++;
		lease->stats.count[DLOCK_STATS_LOST]++;
	}
	if (!lease->found)
		ItemPointerSetInvalid(&lease->tid);
	lease->token = token;
	lease->owner = owner ? pstrdup(owner) : NULL;
	namestrcpy(&lease->role, GetUserNameFromId(GetUserId(), false));
	LeaseBindHolder(lease, GetUserId());
	lease->acquired_at = now;
	lease->expires_at = expires_at;
	lease->released = false;
	lease->released_at = 0;
	lease->min_hold = min_hold > 0 ? min_hold : -1;
	lease->lock_delay = lock_delay > 0 ? lock_delay : -1;
	lease->pin_grace = LeasePinGraceSetting();
	LeaseStore(rels, name, lease);
}

/*
 * Move the expiry of a held lease, and set its lock-delay (0: none).  The
 * minimum hold stays: it counts from the acquisition.
 */
void
LeaseSetExpiry(const DlockRelations *rels, text *name, DlockLease *lease,
			   TimestampTz expires_at, int64 lock_delay)
{
	Assert(lease->found);
	LeaseBindHolder(lease, LeaseHolder(lease));
	lease->expires_at = expires_at;
	lease->lock_delay = lock_delay > 0 ? lock_delay : -1;
	lease->pin_grace = LeasePinGraceSetting();
	LeaseStore(rels, name, lease);
}

/* Mark a held lease released. */
void
LeaseSetReleased(const DlockRelations *rels, text *name, DlockLease *lease,
				 TimestampTz now)
{
	Assert(lease->found);
	DlockEventLease(name, DLOCK_EVENT_RELEASED, lease->token, lease->owner);
	lease->stats.count[DLOCK_STATS_RELEASES]++;
	LeaseBindHolder(lease, LeaseHolder(lease));
	lease->released = true;
	lease->released_at = now;
	LeaseStore(rels, name, lease);
}

/*
 * Mark a lease released by dlock_revoke (revoke.c): at once, without its
 * minimum hold or lock-delay, held or not.
 */
void
LeaseSetRevoked(const DlockRelations *rels, text *name, DlockLease *lease,
				TimestampTz now)
{
	Assert(lease->found);
	DlockEventLease(name, DLOCK_EVENT_REVOKED, lease->token, lease->owner);
	/* counted as a release, or, past its expiry, as lost (stats.c) */
	if (!lease->released)
		lease->stats.count[LeaseIsHeld(lease, now) ?
						   DLOCK_STATS_RELEASES : DLOCK_STATS_LOST]++;
	LeaseBindHolder(lease, LeaseHolder(lease));
	lease->released = true;
	lease->released_at = now;
	lease->min_hold = -1;
	lease->lock_delay = -1;
	LeaseStore(rels, name, lease);
}

/*
 * Names of up to limit leases that are not held now and whose last change
 * (release, or expiry) came before cutoff.  Read with the latest committed
 * state; the caller must lock each name and check again before deleting.
 */
List *
LeaseListIdle(const DlockRelations *rels, TimestampTz now, TimestampTz cutoff,
			  int limit)
{
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;
	List	   *names = NIL;

	rel = DlockOpenLeaseTable(rels, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, SnapshotSelf, 0, NULL);
	while (list_length(names) < limit &&
		   HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		DlockLease	lease;
		TimestampTz last;

		memset(&lease, 0, sizeof(lease));
		LeaseFromTuple(rel, tuple, rels, &lease);
		if (LeaseIsBusy(&lease, now))
			continue;			/* held, or in its minimum hold or lock-delay */
		last = lease.released ? lease.released_at : lease.expires_at;
		if (last < cutoff)
		{
			bool		isnull;
			Datum		name = heap_getattr(tuple, Anum_dlock_lease_name,
											RelationGetDescr(rel), &isnull);

			names = lappend(names, DatumGetTextPCopy(name));
		}
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return names;
}

/* The names of every lease row, read with the latest committed state. */
List *
LeaseListAll(const DlockRelations *rels)
{
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;
	List	   *names = NIL;

	rel = DlockOpenLeaseTable(rels, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, SnapshotSelf, 0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		bool		isnull;
		Datum		name = heap_getattr(tuple, Anum_dlock_lease_name,
										RelationGetDescr(rel), &isnull);

		names = lappend(names, DatumGetTextPCopy(name));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return names;
}

/* Delete the row of a lease that is not held.  Tokens are not affected. */
void
LeaseDelete(const DlockRelations *rels, DlockLease *lease)
{
	Relation	rel;

	if (!lease->for_update)
		elog(ERROR, "dlock lease deleted without LeaseFetchForUpdate");
	rel = DlockOpenLeaseTable(rels, RowExclusiveLock);
	LeaseCheckNoTriggers(rel);
	Assert(lease->found);
	simple_table_tuple_delete(rel, &lease->tid, InvalidSnapshot);
	table_close(rel, NoLock);
	lease->found = false;
	CommandCounterIncrement();
}

/*
 * How many leases the role holds at the time now, counting no further than
 * limit.  A scan of the whole table: only used when dlock.max_leases_per_role
 * is set.
 */
int
LeaseCountHeldByRole(const DlockRelations *rels, Oid role, TimestampTz now,
					 int limit)
{
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;
	int			count = 0;

	rel = DlockOpenLeaseTable(rels, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, SnapshotSelf, 0, NULL);
	while (count < limit && HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		DlockLease	lease;

		memset(&lease, 0, sizeof(lease));
		LeaseFromTuple(rel, tuple, rels, &lease);
		if (LeaseIsHeld(&lease, now) && LeaseHolder(&lease) == role)
			count++;
		if (lease.owner)
			pfree(lease.owner);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return count;
}

/*
 * Raise 42501 for a caller that may not act for the holder of the lease.
 * action is "release", "renew" or "check"; each has its own whole message.
 */
void
DlockDenyHolder(const DlockLease *lease, text *name, const char *action)
{
	Oid			holder = LeaseHolder(lease);
	char	   *rolname = OidIsValid(holder) ? GetUserNameFromId(holder, true) : NULL;
	const char *lockname = text_to_cstring(name);

	if (strcmp(action, "release") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to release lock \"%s\"", lockname),
				 rolname ?
				 errdetail("The lease is held by role \"%s\".", rolname) :
				 errdetail("The lease is held by a role that no longer exists.")));
	else if (strcmp(action, "renew") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to renew lock \"%s\"", lockname),
				 rolname ?
				 errdetail("The lease is held by role \"%s\".", rolname) :
				 errdetail("The lease is held by a role that no longer exists.")));
	else
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to check lock \"%s\"", lockname),
				 rolname ?
				 errdetail("The lease is held by role \"%s\"; only that role and its members may vouch for its token.", rolname) :
				 errdetail("The lease is held by a role that no longer exists.")));
}
