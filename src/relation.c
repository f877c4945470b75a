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
		relid == cached_relations.token_seq)
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
 * The shape of the lease table: 1.0's seven columns (holders by name), or
 * 1.1's, which add role_oid and role_sysid.  A library newer than the
 * extension's objects keeps working on a 1.0 table until ALTER EXTENSION
 * UPDATE.
 */
static bool
DlockLeaseTableHasRoleOid(Oid relid)
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
		role_oid != NULL && strcmp(role_oid, "role_oid") == 0 &&
		role_sysid != NULL && strcmp(role_sysid, "role_sysid") == 0;
	if (natts != Natts_dlock_lease_1_0 && !has_role_oid)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("relation \"dlock_lease\" of extension \"dlock\" has %d columns, which this version of the library does not expect",
						natts),
				 errhint("Run ALTER EXTENSION dlock UPDATE.")));
	return has_role_oid;
}

/*
 * The extension's relations, found in the schema of the function that is
 * being called.  A function whose extension was dropped meanwhile (a waiting
 * acquire, say) gets a clear error.  Every SQL-callable function comes here
 * before it takes or trusts a lock, so the transaction guard (declare.c) is
 * applied here.
 */
const DlockRelations *
DlockGetRelations(FunctionCallInfo fcinfo)
{
	DlockXactGuard();
	if (!cached_relations_valid)
	{
		Oid			nspid;

		if (fcinfo->flinfo == NULL || !OidIsValid(fcinfo->flinfo->fn_oid))
			elog(ERROR, "dlock function called without a function OID");
		nspid = get_func_namespace(fcinfo->flinfo->fn_oid);
		if (!OidIsValid(nspid))
			DlockExtensionGone();

		cached_relations.lease_table = DlockLookupRelation("dlock_lease", nspid);
		cached_relations.has_role_oid =
			DlockLeaseTableHasRoleOid(cached_relations.lease_table);
		cached_relations.lease_index = DlockLookupRelation("dlock_lease_pkey", nspid);
		cached_relations.token_seq = DlockLookupRelation("dlock_token_seq", nspid);
		cached_relations_valid = true;
	}
	return &cached_relations;
}

/*
 * Open the lease table with the given lock.  The table may have been dropped
 * since its OID was looked up (DROP EXTENSION while an acquire waits): that
 * is a clear error, never a failed internal lookup.
 */
Relation
DlockOpenLeaseTable(const DlockRelations *rels, LOCKMODE mode)
{
	Relation	rel = try_relation_open(rels->lease_table, mode);

	if (rel == NULL)
		DlockExtensionGone();
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
