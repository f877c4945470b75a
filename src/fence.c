/*-------------------------------------------------------------------------
 *
 * fence.c
 *		Fencing: vouching for a token (dlock_check, dlock_assert) and the
 *		dlock_fence() trigger that rejects rows carrying a stale token.
 *
 * A check that succeeds keeps DLOCK_LOCK_CHECK on the name until the
 * checking transaction ends.  Only the lease's holder role (or a member of
 * it, or a superuser) may take that protection: anybody else who presents
 * the current token gets 42501.  That lock conflicts only with the hand-over
 * lock of dlock_acquire, so the lease cannot change hands before a write
 * guarded by the check commits or aborts, while the holder can still renew
 * or release it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/rel.h"

#include "dlock.h"

/* Raise LK001 for a token that does not hold the lease, saying why. */
static void
FenceReject(text *name, int64 token, const DlockLease *lease)
{
	ereport(ERROR,
			(errcode(ERRCODE_DLOCK_STALE_TOKEN),
			 errmsg("stale fencing token %lld for lock \"%s\"",
					(long long) token, text_to_cstring(name)),
			 !lease->found ?
			 errdetail("The lock has never been acquired.") :
			 lease->token > token ?
			 errdetail("The lock has since been acquired with a newer token.") :
			 lease->token < token ?
			 errdetail("This token was never issued for this lock.") :
			 lease->released ?
			 errdetail("The lease was released.") :
			 errdetail("The lease expired.")));
}

/*
 * The token holds the lease: keep the check lock, which holds back every
 * hand-over of the name until this transaction ends, but only for the
 * holder role or a member of it.  Anybody else could read a token and sit
 * on a check; they get 42501, with the lock given back first.
 */
static bool
FenceVouch(const LOCKTAG *tag, const DlockLease *lease, text *name)
{
	if (LeaseCallerActsForHolder(lease))
		return true;
	NameLockGiveBack(tag, DLOCK_LOCK_CHECK);
	DlockDenyHolder(lease, name, "check");
	return false;				/* not reached */
}

/*
 * Is token the current unexpired holder of the lease?  On true, the lease
 * cannot change hands until this transaction ends.  With raise, a false
 * becomes an LK001 error.
 */
bool
FenceCheck(const DlockRelations *rels, text *name, int64 token, bool raise)
{
	LOCKTAG		tag;
	DlockLease	lease;
	TimestampTz now;

	NameLockTag(name, &tag);
	NameLockWait(&tag, DLOCK_LOCK_CHECK);
	LeaseFetch(rels, name, &lease);
	now = GetCurrentTimestamp();
	if (LeaseIsHeld(&lease, now) && lease.token == token)
		return FenceVouch(&tag, &lease, name);

	/*
	 * The check lock does not keep the holder from renewing or releasing
	 * meanwhile, and an index scan that races a non-HOT update can miss
	 * both row versions.  Before saying no, read again while no change can
	 * be in progress.
	 */
	NameLockWait(&tag, DLOCK_LOCK_STATE);
	LeaseFetch(rels, name, &lease);
	NameLockGiveBack(&tag, DLOCK_LOCK_STATE);
	now = GetCurrentTimestamp();
	if (LeaseIsHeld(&lease, now) && lease.token == token)
		return FenceVouch(&tag, &lease, name);

	NameLockGiveBack(&tag, DLOCK_LOCK_CHECK);
	if (raise)
		FenceReject(name, token, &lease);
	return false;
}

/* The attribute number of a column named in the trigger's arguments. */
static int
FenceColumn(Relation rel, const char *colname, const char *role,
			Oid typid, Oid alt_typid)
{
	TupleDesc	tupdesc = RelationGetDescr(rel);
	int			attnum = SPI_fnumber(tupdesc, colname);
	Oid			atttype;

	if (attnum == SPI_ERROR_NOATTRIBUTE || attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						colname, RelationGetRelationName(rel)),
				 strcmp(role, "token") == 0 ?
				 errdetail("Trigger function dlock_fence() names it as the token column.") :
				 errdetail("Trigger function dlock_fence() names it as the lock name column.")));
	atttype = TupleDescAttr(tupdesc, attnum - 1)->atttypid;
	if (atttype != typid && atttype != alt_typid)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 strcmp(role, "token") == 0 ?
				 errmsg("column \"%s\" of relation \"%s\" has type %s, but the token column must be of type %s",
						colname, RelationGetRelationName(rel),
						format_type_be(atttype), format_type_be(typid)) :
				 errmsg("column \"%s\" of relation \"%s\" has type %s, but the lock name column must be of type %s",
						colname, RelationGetRelationName(rel),
						format_type_be(atttype), format_type_be(typid))));
	return attnum;
}

/*
 * dlock_fence(lock, token_column [, kind]): BEFORE INSERT OR UPDATE ... FOR
 * EACH ROW trigger that lets a row through only if its token column holds
 * the lease.  lock is the lock name, or with kind 'column' the name of a
 * text column that holds the lock name.
 */
Datum
dlock_fence(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Trigger    *trigger;
	Relation	rel;
	HeapTuple	tuple;
	bool		isnull;
	int			attnum;
	int64		token;
	text	   *name;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function \"dlock_fence\" was not called by trigger manager")));
	if (!TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!(TRIGGER_FIRED_BY_INSERT(trigdata->tg_event) ||
		  TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event)))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function \"dlock_fence\" must be fired BEFORE INSERT OR UPDATE FOR EACH ROW")));

	trigger = trigdata->tg_trigger;
	rel = trigdata->tg_relation;
	if (trigger->tgnargs != 2 && trigger->tgnargs != 3)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg_plural("trigger \"%s\" on relation \"%s\" passes %d argument to dlock_fence(), but it takes 2 or 3",
							   "trigger \"%s\" on relation \"%s\" passes %d arguments to dlock_fence(), but it takes 2 or 3",
							   trigger->tgnargs,
							   trigger->tgname, RelationGetRelationName(rel),
							   trigger->tgnargs),
				 errhint("Use dlock_fence('lock name', 'token column') or dlock_fence('lock name column', 'token column', 'column').")));
	if (trigger->tgnargs == 3 &&
		strcmp(trigger->tgargs[2], "column") != 0 &&
		strcmp(trigger->tgargs[2], "name") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("third argument of dlock_fence() in trigger \"%s\" must be \"name\" or \"column\", not \"%s\"",
						trigger->tgname, trigger->tgargs[2])));

	PreventCommandDuringRecovery("dlock_fence()");

	tuple = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ?
		trigdata->tg_newtuple : trigdata->tg_trigtuple;

	attnum = FenceColumn(rel, trigger->tgargs[1], "token", INT8OID, INT8OID);
	token = DatumGetInt64(SPI_getbinval(tuple, RelationGetDescr(rel), attnum,
										&isnull));
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("fencing token must not be null"),
				 errdetail("Column \"%s\" of relation \"%s\" is null.",
						   trigger->tgargs[1], RelationGetRelationName(rel))));

	if (trigger->tgnargs == 3 && strcmp(trigger->tgargs[2], "column") == 0)
	{
		Datum		value;

		attnum = FenceColumn(rel, trigger->tgargs[0], "lock name",
							 TEXTOID, VARCHAROID);
		value = SPI_getbinval(tuple, RelationGetDescr(rel), attnum, &isnull);
		if (isnull)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("lock name must not be null"),
					 errdetail("Column \"%s\" of relation \"%s\" is null.",
							   trigger->tgargs[0], RelationGetRelationName(rel))));
		name = DatumGetTextPP(value);
	}
	else
		name = cstring_to_text(trigger->tgargs[0]);

	DlockCheckName(name);

	(void) FenceCheck(DlockGetRelations(fcinfo), name, token, true);

	return PointerGetDatum(tuple);
}
