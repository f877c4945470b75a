/*-------------------------------------------------------------------------
 *
 * dlock.c
 *		Module set-up: the GUCs and the callbacks the library registers when
 *		it is loaded, among them the check that a database holds at most one
 *		dlock, for the install scripts of 1.0 and 1.1 too.  Finding the
 *		extension's relations is in relation.c, argument checks and
 *		timestamp arithmetic in args.c.
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_proc.h"
#include "commands/extension.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/catcache.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "compat.h"
#include "dlock.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

int			dlock_max_ttl = 86400;
int			dlock_max_leases_per_role = 0;
bool		dlock_events = false;
int			dlock_lock_delay = 0;
int			dlock_pin_grace = 30000;

static object_access_hook_type prev_object_access_hook = NULL;
/* the extension (and transaction) whose script GuardObjectAccess passed */
static Oid	guard_extension = InvalidOid;
static TransactionId guard_xid = InvalidTransactionId;

/*
 * At most one dlock per database (issue 26): src/sql/00_guard.sql checks
 * it at the top of the 1.2 scripts of both editions, but the released 1.0
 * and 1.1 scripts are frozen and check nothing, so CREATE EXTENSION dlock
 * VERSION '1.0' or '1.1' beside the SQL edition would make a second lease
 * store.  Their CREATE FUNCTION ... LANGUAGE C loads this library, whose
 * object access hook then sees every object the script creates
 * (OAT_POST_CREATE): at the first one of a script of extension "dlock" it
 * refuses, with 00_guard.sql's error, if the database has the SQL edition
 * (extension "dlock_sql", pg_tle's included) or any dlock_edition() that
 * is not this extension's (the SQL edition's psql script, a copy under
 * another name).  It takes 00_guard.sql's lock first, so that installs of
 * either edition at once serialise, and then reads the catalogs afresh.
 */
static void
GuardRefuse(const char *extname, Oid nspid)
{
	char	   *nspname = get_namespace_name(nspid);

	if (extname != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot install dlock: extension \"%s\" is installed in schema \"%s\"",
						extname, nspname),
				 errdetail("A database holds at most one dlock, of either edition: two would keep two lease tables and two token counters for one lock name."),
				 errhint("Use the dlock that is installed, or move to the other edition by export and import (docs/editions.md).")));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("cannot install dlock: a dlock is installed in schema \"%s\"", nspname),
			 errdetail("A database holds at most one dlock, of either edition: two would keep two lease tables and two token counters for one lock name."),
			 errhint("Use the dlock that is installed, or move to the other edition by export and import (docs/editions.md).")));
}

static void
GuardCheck(void)
{
	LOCKTAG		tag;
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	CatCList   *procs;
	Oid			nspid = InvalidOid;
	int			i;

	/* 00_guard.sql's pg_advisory_xact_lock(1684825963, 26) */
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, 1684825963, 26, 2);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	AcceptInvalidationMessages();

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber,
				F_NAMEEQ, CStringGetDatum("dlock_sql"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
		nspid = ((Form_pg_extension) GETSTRUCT(tuple))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	if (OidIsValid(nspid))
		GuardRefuse("dlock_sql", nspid);

	/* any other dlock_edition(): the first schema by name, as 00_guard.sql */
	procs = SearchSysCacheList1(PROCNAMEARGSNSP, CStringGetDatum("dlock_edition"));
	for (i = 0; i < procs->n_members; i++)
	{
		Form_pg_proc proc = (Form_pg_proc) GETSTRUCT(&procs->members[i]->tuple);

		if (proc->pronargs != 0 ||
			getExtensionOfObject(ProcedureRelationId, proc->oid) == CurrentExtensionObject)
			continue;
		if (!OidIsValid(nspid) ||
			strcmp(get_namespace_name(proc->pronamespace), get_namespace_name(nspid)) < 0)
			nspid = proc->pronamespace;
	}
	ReleaseSysCacheList(procs);
	if (OidIsValid(nspid))
		GuardRefuse(NULL, nspid);
}

static void
GuardObjectAccess(ObjectAccessType access, Oid classId, Oid objectId,
				  int subId, void *arg)
{
	char	   *extname;

	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (access != OAT_POST_CREATE || !creating_extension ||
		!OidIsValid(CurrentExtensionObject))
		return;
	if (CurrentExtensionObject == guard_extension &&
		GetTopTransactionIdIfAny() == guard_xid)
		return;
	extname = get_extension_name(CurrentExtensionObject);
	if (extname == NULL)
		return;
	if (strcmp(extname, "dlock") == 0)
		GuardCheck();
	guard_extension = CurrentExtensionObject;
	guard_xid = GetTopTransactionIdIfAny();
}

void
_PG_init(void)
{
	DefineCustomIntVariable("dlock.max_ttl",
							"Largest ttl a lease may be acquired or renewed for.",
							"A longer ttl is rejected with SQLSTATE 22023.",
							&dlock_max_ttl,
							86400,
							1,
							INT_MAX,
							PGC_SUSET,
							GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomIntVariable("dlock.max_leases_per_role",
							"Largest number of leases one role may hold at once.",
							"Zero means no limit.  Checked at each new acquisition "
							"with a scan of the lease table.",
							&dlock_max_leases_per_role,
							0,
							0,
							INT_MAX,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("dlock.events",
							 "Sends NOTIFY dlock when a lease changes hands or is released.",
							 "The payload is JSON: lock, event (acquired, taken_over "
							 "or released), token and owner.  Notifying commits are "
							 "serialized cluster-wide, so it is off by default.",
							 &dlock_events,
							 false,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
	StatsInit();
	DefineCustomIntVariable("dlock.lock_delay",
							"Lock-delay of a lease acquired or renewed without one.",
							"After a lease expires without a release, its name "
							"cannot be taken for this long.  At most dlock.max_ttl.",
							&dlock_lock_delay,
							0,
							0,
							INT_MAX,
							PGC_SUSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("dlock.pin_grace",
							"How long past a lease's expiry or release a transaction holding its check protection may delay a hand-over.",
							"Read in the holder's session at acquire and renew and stored "
							"with the lease; then a waiting acquire ends that transaction.  "
							"-1: never.",
							&dlock_pin_grace,
							30000,
							-1,
							INT_MAX,
							PGC_SUSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
	LockTagInit();
	MarkGUCPrefixReserved("dlock");

	RelationInit();
	TokenInit();
	WaitInit();

	prev_object_access_hook = object_access_hook;
	object_access_hook = GuardObjectAccess;
}
