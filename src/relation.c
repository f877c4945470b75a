/*-------------------------------------------------------------------------
 *
 * relation.c
 *		Finding the extension's own relations.
 *
 * The relations are found through the schema of the called function, which
 * is the schema the extension was created in; the caller's search_path is
 * never consulted.  Their OIDs are cached for the backend and forgotten on
 * any relcache invalidation that concerns them (DROP EXTENSION, say).
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "fmgr.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "compat.h"
#include "dlock.h"

static DlockRelations cached_relations;
static bool cached_relations_valid = false;

static void
DlockRelcacheCallback(Datum arg, Oid relid)
{
	if (relid == InvalidOid ||
		relid == cached_relations.lease_table ||
		relid == cached_relations.lease_index ||
		relid == cached_relations.token_seq ||
		relid == cached_relations.key_table)
		cached_relations_valid = false;
}

/* Called once, from _PG_init. */
void
RelationInit(void)
{
	CacheRegisterRelcacheCallback(DlockRelcacheCallback, (Datum) 0);
}

/* The extension was dropped while one of its functions ran. */
static void
DlockExtensionGone(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("extension \"dlock\" was dropped while a dlock function was running")));
}

static Oid
DlockLookupRelation(const char *relname, Oid nspid)
{
	Oid			relid = get_relname_relid(relname, nspid);

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("relation \"%s.%s\" of extension \"dlock\" does not exist",
						get_namespace_name(nspid), relname),
				 errhint("Drop and re-create the extension.")));
	return relid;
}

/*
 * The shape of the lease table, which also tells the key scheme: 1.0's
 * seven columns (holders by name), 1.1's, which add role_oid and
 * role_sysid, or 1.2's, where role_sysid is called role_system_identifier.
 * Names are keyed the 1.1 way on 1.0 and 1.1 objects, with the secret of
 * dlock_lock_key on 1.2's (locktag.c).  A library newer than the
 * extension's objects keeps working on them until ALTER EXTENSION UPDATE.
 *
 * The 1.2 update renames role_sysid because a 1.1 library checks that name
 * here, whenever the table's relcache entry was invalidated (the rename
 * invalidates it): so every backend still running a 1.1 library refuses
 * every call after the update, instead of keying names the old way.
 */
typedef enum DlockLeaseShape
{
	DLOCK_LEASE_1_0,
	DLOCK_LEASE_1_1,
	DLOCK_LEASE_1_2
} DlockLeaseShape;

static DlockLeaseShape
DlockLeaseTableShape(Oid relid)
{
	HeapTuple	tuple;
	int			natts;
	char	   *role_oid;
	char	   *role_sysid;
	bool		has_role_oid;

	/*
	 * Read from the catalogs, without a lock on the table: an acquire waits
	 * for that lock no longer than its deadline (acquire.c), and a VACUUM
	 * FULL may be queued for it.
	 */
	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		DlockExtensionGone();
	natts = ((Form_pg_class) GETSTRUCT(tuple))->relnatts;
	ReleaseSysCache(tuple);
	role_oid = get_attname(relid, Anum_dlock_lease_role_oid, true);
	role_sysid = get_attname(relid, Anum_dlock_lease_role_sysid, true);
	has_role_oid = natts >= Natts_dlock_lease &&
		role_oid != NULL && strcmp(role_oid, "role_oid") == 0;
	if (natts == Natts_dlock_lease_1_0)
		return DLOCK_LEASE_1_0;
	if (has_role_oid && role_sysid != NULL && strcmp(role_sysid, "role_sysid") == 0)
		return DLOCK_LEASE_1_1;
	if (has_role_oid && role_sysid != NULL &&
		strcmp(role_sysid, "role_system_identifier") == 0)
		return DLOCK_LEASE_1_2;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("relation \"dlock_lease\" of extension \"dlock\" has %d columns, which this version of the library does not expect",
					natts),
			 errhint("Run ALTER EXTENSION dlock UPDATE.")));
	return DLOCK_LEASE_1_0;		/* keep compiler quiet */
}

/*
 * The extension's relations, found in the schema of the function that is
 * being called.  A function whose extension was dropped meanwhile (a waiting
 * acquire, say) gets a clear error.  Every SQL-callable function comes here
 * before it takes or trusts a lock, so the transaction guard (xactstate.c) is
 * applied here.
 */
const DlockRelations *
DlockGetRelations(FunctionCallInfo fcinfo)
{
	return DlockGetRelationsWait(fcinfo, NULL);
}

/*
 * As DlockGetRelations, for an acquire: the lock key's table is waited for
 * no longer than w's deadline (an operator's VACUUM FULL of it queued behind
 * a pg_dump, say), and NULL then; with w NULL, as long as it takes.
 */
const DlockRelations *
DlockGetRelationsWait(FunctionCallInfo fcinfo, const DlockWait *w)
{
	DlockXactGuard();
	if (!cached_relations_valid)
	{
		Oid			nspid;
		DlockLeaseShape shape;

		if (fcinfo->flinfo == NULL || !OidIsValid(fcinfo->flinfo->fn_oid))
			elog(ERROR, "dlock function called without a function OID");
		nspid = get_func_namespace(fcinfo->flinfo->fn_oid);
		if (!OidIsValid(nspid))
			DlockExtensionGone();

		cached_relations.lease_table = DlockLookupRelation("dlock_lease", nspid);
		shape = DlockLeaseTableShape(cached_relations.lease_table);
		cached_relations.has_role_oid = shape != DLOCK_LEASE_1_0;
		/* 1.2's columns by name: a 1.1 table has none of them. */
		cached_relations.att_min_hold =
			get_attnum(cached_relations.lease_table, "min_hold");
		cached_relations.att_lock_delay =
			get_attnum(cached_relations.lease_table, "lock_delay");
		cached_relations.att_pin_grace =
			get_attnum(cached_relations.lease_table, "pin_grace");
		cached_relations.lease_index = DlockLookupRelation("dlock_lease_pkey", nspid);
		cached_relations.token_seq = DlockLookupRelation("dlock_token_seq", nspid);
		cached_relations.key_table = shape == DLOCK_LEASE_1_2 ?
			DlockLookupRelation("dlock_lock_key", nspid) : InvalidOid;
		StatsFindColumns(&cached_relations, nspid);
		if (!LockKeyLoad(cached_relations.key_table, w))
			return NULL;
		cached_relations_valid = true;
	}
	return &cached_relations;
}

/*
 * A call that found the relations, and keyed its name the 1.1 way, before
 * the update to 1.2 committed, and got the lease table only after it (the
 * update holds the table locked until it commits): its name's locks are
 * under a key no backend uses any more, so it must not go on.  The update
 * itself refuses while such locks are held (dlock--1.1--1.2.sql); this is
 * for a call that took its lock after that check.
 */
static void
DlockKeySchemeUnchanged(Oid lease_table)
{
	if (DlockLeaseTableShape(lease_table) == DLOCK_LEASE_1_2)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"dlock\" was updated while a dlock function was running"),
				 errhint("Run the transaction again.")));
}

/*
 * Open the lease table with the given lock.  The table may have been dropped
 * since its OID was looked up (DROP EXTENSION while an acquire waits): that
 * is a clear error, never a failed internal lookup.  The lock of a write,
 * kept until the transaction ends, is the (sub)transaction's, never a
 * portal's (wait.c): taken for it first, then again by the open.  NoLock:
 * the caller already holds a lock on the table.
 */
Relation
DlockOpenLeaseTable(const DlockRelations *rels, LOCKMODE mode)
{
	Relation	rel;

	if (mode != AccessShareLock && mode != NoLock)
		XactLockRelation(rels->lease_table, mode);
	rel = try_relation_open(rels->lease_table, mode);
	if (rel == NULL)
		DlockExtensionGone();
	/* The lock taken, invalidations are in: was it updated to 1.2 since? */
	if (!cached_relations_valid && !OidIsValid(rels->key_table))
		DlockKeySchemeUnchanged(rels->lease_table);
	return rel;
}

/*
 * The index that finds a lease by name: the table's primary key, as the
 * relation cache knows it now (REINDEX CONCURRENTLY replaces the index and
 * its OID).
 */
Oid
DlockLeaseIndex(Relation rel)
{
	Oid			indexoid = DlockRelationGetPrimaryKeyIndex(rel);

	if (!OidIsValid(indexoid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("relation \"%s\" of extension \"dlock\" has no primary key",
						RelationGetRelationName(rel)),
				 errhint("Drop and re-create the extension.")));
	return indexoid;
}
