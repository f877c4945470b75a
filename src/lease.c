/*-------------------------------------------------------------------------
 *
 * lease.c
 *		Reading and writing lease rows of @extschema@.dlock_lease.
 *
 * Reads use SnapshotSelf: the latest committed version of the row plus this
 * transaction's own changes, whatever the caller's isolation level.  No
 * predicate locks are taken for it, so SERIALIZABLE callers get no
 * serialization failures from dlock's own reads.  Writes go straight to the
 * heap and the primary key index; the caller must hold DLOCK_LOCK_STATE on
 * the name (see dlock.h), so nobody else changes the row meanwhile.
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
#include "access/xact.h"
#include "catalog/indexing.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "nodes/pg_list.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "compat.h"
#include "dlock.h"

/* Fill *lease with the latest committed state of the lease called name. */
void
LeaseFetch(const DlockRelations *rels, text *name, DlockLease *lease)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;

	memset(lease, 0, sizeof(DlockLease));

	rel = table_open(rels->lease_table, AccessShareLock);
	ScanKeyInit(&key, Anum_dlock_lease_name, BTEqualStrategyNumber,
				F_TEXTEQ, PointerGetDatum(name));
	scan = systable_beginscan(rel, rels->lease_index, true, SnapshotSelf,
							  1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		Datum		values[Natts_dlock_lease];
		bool		nulls[Natts_dlock_lease];

		heap_deform_tuple(tuple, RelationGetDescr(rel), values, nulls);

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
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
}

/* Is the lease held by somebody at the time now? */
bool
LeaseIsHeld(const DlockLease *lease, TimestampTz now)
{
	return lease->found && !lease->released && lease->expires_at > now;
}

/*
 * Write *lease as the new state of the row called name: an update of the
 * version that was fetched, or an insert for a name never seen before.
 */
static void
LeaseStore(const DlockRelations *rels, text *name, DlockLease *lease)
{
	Relation	rel;
	Datum		values[Natts_dlock_lease];
	bool		nulls[Natts_dlock_lease];
	HeapTuple	tuple;
	bool		is_update = ItemPointerIsValid(&lease->tid);

	memset(nulls, false, sizeof(nulls));
	values[Anum_dlock_lease_name - 1] = PointerGetDatum(name);
	values[Anum_dlock_lease_token - 1] = Int64GetDatum(lease->token);
	if (lease->owner)
		values[Anum_dlock_lease_owner - 1] = CStringGetTextDatum(lease->owner);
	else
		nulls[Anum_dlock_lease_owner - 1] = true;
	values[Anum_dlock_lease_role - 1] = NameGetDatum(&lease->role);
	values[Anum_dlock_lease_acquired_at - 1] =
		TimestampTzGetDatum(lease->acquired_at);
	values[Anum_dlock_lease_expires_at - 1] =
		TimestampTzGetDatum(lease->expires_at);
	if (lease->released)
		values[Anum_dlock_lease_released_at - 1] =
			TimestampTzGetDatum(lease->released_at);
	else
		nulls[Anum_dlock_lease_released_at - 1] = true;

	/*
	 * The CatalogTuple* routines work for any heap relation: they keep every
	 * index of the table up to date (also one being built by REINDEX
	 * CONCURRENTLY), and skip the index for a HOT update.
	 */
	rel = table_open(rels->lease_table, RowExclusiveLock);
	tuple = heap_form_tuple(RelationGetDescr(rel), values, nulls);
	if (is_update)
		CatalogTupleUpdate(rel, &lease->tid, tuple);
	else
		CatalogTupleInsert(rel, tuple);

	lease->found = true;
	lease->tid = tuple->t_self;
	heap_freetuple(tuple);
	table_close(rel, NoLock);

	/* Later calls in this same statement must see the new version. */
	CommandCounterIncrement();
}

/* Hand the lease to a new holder with the given token. */
void
LeaseWriteNew(const DlockRelations *rels, text *name, DlockLease *lease,
			  int64 token, const char *owner, TimestampTz now,
			  TimestampTz expires_at)
{
	if (!lease->found)
		ItemPointerSetInvalid(&lease->tid);
	lease->token = token;
	lease->owner = owner ? pstrdup(owner) : NULL;
	namestrcpy(&lease->role, GetUserNameFromId(GetUserId(), false));
	lease->acquired_at = now;
	lease->expires_at = expires_at;
	lease->released = false;
	lease->released_at = 0;
	LeaseStore(rels, name, lease);
}

/* Move the expiry of a held lease. */
void
LeaseSetExpiry(const DlockRelations *rels, text *name, DlockLease *lease,
			   TimestampTz expires_at)
{
	Assert(lease->found);
	lease->expires_at = expires_at;
	LeaseStore(rels, name, lease);
}

/* Mark a held lease released. */
void
LeaseSetReleased(const DlockRelations *rels, text *name, DlockLease *lease,
				 TimestampTz now)
{
	Assert(lease->found);
	lease->released = true;
	lease->released_at = now;
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

	rel = table_open(rels->lease_table, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, SnapshotSelf, 0, NULL);
	while (list_length(names) < limit &&
		   HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Datum		values[Natts_dlock_lease];
		bool		nulls[Natts_dlock_lease];
		TimestampTz expires_at;
		TimestampTz last;

		heap_deform_tuple(tuple, RelationGetDescr(rel), values, nulls);
		expires_at = DatumGetTimestampTz(values[Anum_dlock_lease_expires_at - 1]);
		if (nulls[Anum_dlock_lease_released_at - 1])
		{
			if (expires_at > now)
				continue;		/* held */
			last = expires_at;
		}
		else
			last = DatumGetTimestampTz(values[Anum_dlock_lease_released_at - 1]);
		if (last < cutoff)
			names = lappend(names,
							DatumGetTextPCopy(values[Anum_dlock_lease_name - 1]));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return names;
}

/* Delete the row of a lease that is not held.  Tokens are not affected. */
void
LeaseDelete(const DlockRelations *rels, DlockLease *lease)
{
	Relation	rel = table_open(rels->lease_table, RowExclusiveLock);

	Assert(lease->found);
	CatalogTupleDelete(rel, &lease->tid);
	table_close(rel, NoLock);
	lease->found = false;
	CommandCounterIncrement();
}

/*
 * How many leases role holds at the time now, counting no further than
 * limit.  A scan of the whole table: only used when dlock.max_leases_per_role
 * is set.
 */
int
LeaseCountHeldByRole(const DlockRelations *rels, const char *role, TimestampTz now,
					 int limit)
{
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;
	int			count = 0;

	rel = table_open(rels->lease_table, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, SnapshotSelf, 0, NULL);
	while (count < limit && HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Datum		values[Natts_dlock_lease];
		bool		nulls[Natts_dlock_lease];

		heap_deform_tuple(tuple, RelationGetDescr(rel), values, nulls);
		if (nulls[Anum_dlock_lease_released_at - 1] &&
			strcmp(NameStr(*DatumGetName(values[Anum_dlock_lease_role - 1])),
				   role) == 0 &&
			DatumGetTimestampTz(values[Anum_dlock_lease_expires_at - 1]) > now)
			count++;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return count;
}
