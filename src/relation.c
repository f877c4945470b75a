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
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/namespace.h"
#include "fmgr.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

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

/* The C code reads and writes lease rows of exactly Natts_dlock_lease columns. */
static void
DlockCheckLeaseTable(Oid relid)
{
	Relation	rel = table_open(relid, AccessShareLock);
	int			natts = RelationGetDescr(rel)->natts;

	table_close(rel, AccessShareLock);
	if (natts != Natts_dlock_lease)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("relation \"dlock_lease\" of extension \"dlock\" has %d columns, but this version of the library expects %d",
						natts, Natts_dlock_lease),
				 errhint("Run ALTER EXTENSION dlock UPDATE.")));
}

/*
 * The extension's relations, found in the schema of the function that is
 * being called.
 */
const DlockRelations *
DlockGetRelations(FunctionCallInfo fcinfo)
{
	if (!cached_relations_valid)
	{
		Oid			nspid;

		if (fcinfo->flinfo == NULL || !OidIsValid(fcinfo->flinfo->fn_oid))
			elog(ERROR, "dlock function called without a function OID");
		nspid = get_func_namespace(fcinfo->flinfo->fn_oid);
		if (!OidIsValid(nspid))
			elog(ERROR, "cache lookup failed for function %u",
				 fcinfo->flinfo->fn_oid);

		cached_relations.lease_table = DlockLookupRelation("dlock_lease", nspid);
		DlockCheckLeaseTable(cached_relations.lease_table);
		cached_relations.lease_index = DlockLookupRelation("dlock_lease_pkey", nspid);
		cached_relations.token_seq = DlockLookupRelation("dlock_token_seq", nspid);
		cached_relations_valid = true;
	}
	return &cached_relations;
}
