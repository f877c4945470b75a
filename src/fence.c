/*-------------------------------------------------------------------------
 *
 * fence.c
 *		Fencing: vouching for a token (dlock_check, dlock_assert) and the
 *		dlock_fence() trigger that lets no stale writer change a row.
 *
 * A check that succeeds keeps DLOCK_LOCK_CHECK on the name until the
 * checking transaction ends.  Only the lease's holder role (or a member of
 * it, or a superuser) may take that protection: anybody else who presents
 * the current token gets 42501.  That lock conflicts only with the hand-over
 * lock of dlock_acquire, so the lease cannot change hands before a write
 * guarded by the check commits or aborts, while the holder can still renew
 * or release it.
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/partition.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "dlock.h"

/*
 * Raise LK001 for a token that does not hold the lease, saying why; but
 * why only to the holder role (and its members, as role vouches): to
 * anybody else "newer" against "never issued" would tell the order of the
 * token tried and the lease's, and so the lease's token in some 60 tries,
 * which dlock_leases shows only to the holder role.
 */
static void
FenceReject(text *name, int64 token, const DlockLease *lease, Oid role)
{
	StatsCountFenceRefusal(name);
	ereport(ERROR,
			(errcode(ERRCODE_DLOCK_STALE_TOKEN),
			 errmsg("stale fencing token %lld for lock \"%s\"",
					(long long) token, text_to_cstring(name)),
			 !lease->found ?
			 errdetail("The lock has never been acquired.") :
			 !LeaseRoleActsForHolder(lease, role) ?
			 errdetail("The token does not hold the lease, whose holder is another role.") :
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
 * hand-over of the name until this transaction ends, but only when role
 * (the role vouching for the token) is the holder role or a member of it.
 * Anybody else could read a token and sit on a check; they get 42501, with
 * the lock given back first if this call took it.
 */
static bool
FenceVouch(const LOCKTAG *tag, const DlockLease *lease, text *name,
		   bool taken, Oid role)
{
	if (LeaseRoleActsForHolder(lease, role))
	{
		if (taken)
			CheckLockRemember(tag);
		return true;
	}
	if (taken)
		NameLockGiveBack(tag, DLOCK_LOCK_CHECK);
	DlockDenyHolder(lease, name, "check");
	return false;				/* not reached */
}

/*
 * Read the lease of name (whose key is tag) and say whether token holds it
 * unexpired; *lease and *now are left as decided on.  A lease the row shows
 * held is decided on from that row: by token, yes; by another token, no
 * (only its holder changes a held lease, and a hand-over needs it released
 * or expired).  Before any other no, read again while no change can be in
 * progress (under the name's state lock, given back at once): a renewal
 * still in progress may extend a lease the first read saw expire, and a
 * lookup may miss the row (LeaseFetchSettled).  So a check of a held lease,
 * by any role and with any token, never takes the state lock that an owner
 * renewal only tries (acquire.c).
 */
static bool
FenceLeaseHeldBy(const DlockRelations *rels, text *name, const LOCKTAG *tag,
				 int64 token, DlockLease *lease, TimestampTz *now)
{
	LeaseFetchSettled(rels, name, lease);
	*now = GetCurrentTimestamp();
	if (LeaseIsHeld(lease, *now))
		return lease->token == token;
	NameLockWait(tag, DLOCK_LOCK_STATE);
	LeaseFetch(rels, name, lease);
	NameLockGiveBack(tag, DLOCK_LOCK_STATE);
	*now = GetCurrentTimestamp();
	return LeaseIsHeld(lease, *now) && lease->token == token;
}

/*
 * Is token the current unexpired holder of the lease?  On true, the lease
 * cannot change hands until this transaction ends.  With raise, a false
 * becomes an LK001 error.  role vouches for the token: it must act for the
 * holder role, or the answer is 42501.  dlock_check and dlock_assert vouch
 * as the current user; the fence as the role that declared the token, or
 * for a token the row carries as the current user (see below).
 *
 * A transaction that already holds the name's check lock (an earlier check
 * that vouched, xactstate.c) does not take it again: taking it again would
 * only count it once more.  Everything else is done every time: the lease
 * row is read (a release or an expiry since the earlier check shows only
 * there) and role must act for the holder role (SET ROLE may have changed
 * the current user since).
 */
bool
FenceCheck(const DlockRelations *rels, text *name, int64 token, Oid role,
		   bool raise)
{
	LOCKTAG		tag;
	DlockLease	lease;
	TimestampTz now;
	bool		taken;

	NameLockTag(name, &tag);
	taken = !CheckLockHeld(&tag);
	if (taken)
		NameLockWait(&tag, DLOCK_LOCK_CHECK);
	if (FenceLeaseHeldBy(rels, name, &tag, token, &lease, &now))
		return FenceVouch(&tag, &lease, name, taken, role);

	if (taken)
		NameLockGiveBack(&tag, DLOCK_LOCK_CHECK);
	if (raise)
		FenceReject(name, token, &lease, role);
	return false;
}

/*
 * Does token hold the unexpired lease on name?  If so, *remaining is the
 * time left on it (expires_at minus the clock, as timestamptz subtraction
 * gives it) and the result is true.  It only reads: no lock is kept, so
 * the lease may change hands right after it returns.  Like dlock_check, it
 * vouches for a token only to the holder role (or a member of it, or a
 * superuser): anybody else who presents the current token gets 42501.
 */
bool
FenceRemaining(const DlockRelations *rels, text *name, int64 token,
			   Interval *remaining)
{
	LOCKTAG		tag;
	DlockLease	lease;
	TimestampTz now;
	Interval   *left;

	NameLockTag(name, &tag);
	if (!FenceLeaseHeldBy(rels, name, &tag, token, &lease, &now))
		return false;
	if (!LeaseCallerActsForHolder(&lease))
		DlockDenyHolder(&lease, name, "check");
	left = DatumGetIntervalP(DirectFunctionCall2(timestamp_mi,
												 TimestampTzGetDatum(lease.expires_at),
												 TimestampTzGetDatum(now)));
	*remaining = *left;
	return true;
}

/*
 * The dlock_fence() trigger
 * -------------------------
 * The writer's token is the token the new row carries when the statement
 * changes it (an INSERT, or an UPDATE whose new token differs from the old
 * one); otherwise it is the token the transaction declared for the row's
 * lock (dlock_assert).  A token written back unchanged proves nothing: a
 * stale writer writes back what it read, and a MERGE reports the union of
 * all its branches' columns as updated, so neither the value nor the
 * updated-columns list can tell.  Without a writer's token the write is
 * rejected; a NULL token is filled in from the declaration.
 *
 * Who vouches for the writer's token.  A declared token is vouched for by
 * the role that declared it (the current user of its dlock_assert), wherever
 * the write runs: in a referential action, which PostgreSQL runs as the
 * owner of the referencing table, or in a SECURITY DEFINER function.  A
 * token the new row carries is vouched for by the current user, except in
 * a referential action (ON DELETE/UPDATE CASCADE, SET NULL, SET DEFAULT:
 * ri_triggers.c runs them with SECURITY_NOFORCE_RLS, which
 * InNoForceRLSOperation() reports): there the token comes from whoever
 * changed the referenced row, so it is never taken as the writer's; the
 * write needs a declaration, and a token it carries must be the declared
 * one.  The role must act for the holder role (FenceCheck).
 *
 * The writer's token must hold the lease (FenceCheck, which keeps the check
 * lock to the end of the transaction) and must not be below the row's old
 * token, so a row's token never goes down.  Tokens are compared per lock:
 * an UPDATE that changes the lock name column is checked against both
 * locks, each with its own writer's token (the old row's token against the
 * old lock's), and the new row gets the new lock's writer's token where the
 * UPDATE leaves the token column alone (the old token is the old lock's).
 *
 * An UPDATE that moves a row to another partition fires BEFORE UPDATE on
 * the source partition, then BEFORE DELETE there, then BEFORE INSERT on the
 * target.  The UPDATE is checked in full; it leaves a FenceMove behind, and
 * the DELETE of that very row version, then the INSERT of a row of the new
 * lock and token into a partition of the same tree, pass for the writer the
 * UPDATE checked (checked again).  Any other call of the trigger in between
 * forgets the move, so nothing else can use it.
 */

/*
 * The trigger's configuration, from its arguments.  It is worked out on the
 * first call of the trigger in a statement and kept in the trigger's
 * FmgrInfo (fn_extra, in the statement's memory) for the calls on the
 * statement's other rows: the executor gives each trigger of each result
 * relation its own FmgrInfo, and neither the trigger's arguments nor the
 * relation's columns can change while the statement runs.  The key is
 * checked all the same.
 */
typedef struct FenceConfig
{
	Oid			tgoid;			/* the key: this trigger ... */
	Oid			relid;			/* ... on this relation ... */
	bool		truncate;		/* ... fired by TRUNCATE or not */
	Relation	rel;			/* the relation of the current call */
	const char *token_column;
	int			token_attnum;	/* 0 for a TRUNCATE trigger */
	int			lock_attnum;	/* 0 when the lock name is constant */
	text	   *lock;			/* the constant lock name */
	Oid			fn_oid;			/* dlock_fence's own OID */
} FenceConfig;

/* Why a write has no writer's token: each case has its own detail. */
typedef enum FenceNeed
{
	FENCE_NEED_NULL,			/* the new token is NULL */
	FENCE_NEED_UNCHANGED,		/* an UPDATE that leaves the token alone */
	FENCE_NEED_OLD_LOCK,		/* an UPDATE that moves the row off a lock */
	FENCE_NEED_DELETE,
	FENCE_NEED_TRUNCATE,
	FENCE_NEED_REFERENTIAL		/* a referential action writes the token */
} FenceNeed;

/* A writer's token, and the role that vouches for it (see above). */
typedef struct FenceWriter
{
	int64		token;
	Oid			role;
} FenceWriter;

/*
 * The attribute number of a column named in the trigger's arguments.  The
 * token column must hold every bigint: bigint itself or a domain over it
 * (tokens pass 2^31 at once: the first 1.1 token is about 1.8e15).
 */
static int
FenceColumn(Relation rel, const char *colname, const char *role,
			Oid typid, Oid alt_typid)
{
	TupleDesc	tupdesc = RelationGetDescr(rel);
	int			attnum = SPI_fnumber(tupdesc, colname);
	bool		is_token = strcmp(role, "token") == 0;
	Oid			atttype;

	if (attnum == SPI_ERROR_NOATTRIBUTE || attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						colname, RelationGetRelationName(rel)),
				 is_token ?
				 errdetail("Trigger function dlock_fence() names it as the token column.") :
				 errdetail("Trigger function dlock_fence() names it as the lock name column.")));
	atttype = TupleDescAttr(tupdesc, attnum - 1)->atttypid;
	if (is_token ? getBaseType(atttype) != typid :
		atttype != typid && atttype != alt_typid)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 is_token ?
				 errmsg("column \"%s\" of relation \"%s\" has type %s, but the token column must be of type %s",
						colname, RelationGetRelationName(rel),
						format_type_be(atttype), format_type_be(typid)) :
				 errmsg("column \"%s\" of relation \"%s\" has type %s, but the lock name column must be of type %s",
						colname, RelationGetRelationName(rel),
						format_type_be(atttype), format_type_be(typid)),
				 is_token ?
				 errhint("Change column \"%s\" to type bigint, or to a domain over bigint: tokens do not fit in a narrower type.",
						 colname) : 0));
	return attnum;
}

/*
 * Check how the trigger is fired: on every call.  A trigger limited to
 * UPDATE OF a column list, or with a WHEN condition, does not fire for
 * every write, so the writes it skips would not be fenced: it is refused
 * whenever it does fire.
 */
static void
FenceCheckFiring(TriggerData *trigdata)
{
	TriggerEvent event = trigdata->tg_event;
	Trigger    *trigger = trigdata->tg_trigger;

	if (!TRIGGER_FIRED_BEFORE(event) ||
		(TRIGGER_FIRED_BY_TRUNCATE(event) ?
		 !TRIGGER_FIRED_FOR_STATEMENT(event) :
		 !TRIGGER_FIRED_FOR_ROW(event)))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function \"dlock_fence\" must be fired BEFORE INSERT OR UPDATE OR DELETE FOR EACH ROW, or BEFORE TRUNCATE FOR EACH STATEMENT")));
	if (trigger->tgnattr > 0)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("trigger \"%s\" on relation \"%s\" has a column list, which function \"dlock_fence\" does not allow",
						trigger->tgname,
						RelationGetRelationName(trigdata->tg_relation)),
				 errdetail("An UPDATE that sets none of the listed columns would not be fenced."),
				 errhint("Re-create the trigger BEFORE INSERT OR UPDATE OR DELETE, without OF.")));
	if (trigger->tgqual != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("trigger \"%s\" on relation \"%s\" has a WHEN condition, which function \"dlock_fence\" does not allow",
						trigger->tgname,
						RelationGetRelationName(trigdata->tg_relation)),
				 errdetail("A write for which the condition is not true would not be fenced."),
				 errhint("Re-create the trigger without WHEN.")));
}

/*
 * Check what the trigger's arguments say, into *cfg (allocated in the
 * current memory context): dlock_fence(lock, token_column [, kind]) as a
 * BEFORE INSERT, UPDATE or DELETE row trigger, or dlock_fence(lock [,
 * token_column [, 'name']]) as a BEFORE TRUNCATE statement trigger.
 */
static void
FenceConfigure(TriggerData *trigdata, FenceConfig *cfg)
{
	Trigger    *trigger = trigdata->tg_trigger;
	bool		truncate;
	bool		by_column;

	cfg->rel = trigdata->tg_relation;
	truncate = TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event);
	if (trigger->tgnargs < (truncate ? 1 : 2) || trigger->tgnargs > 3)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg_plural("trigger \"%s\" on relation \"%s\" passes %d argument to dlock_fence(), but it takes 2 or 3",
							   "trigger \"%s\" on relation \"%s\" passes %d arguments to dlock_fence(), but it takes 2 or 3",
							   trigger->tgnargs,
							   trigger->tgname, RelationGetRelationName(cfg->rel),
							   trigger->tgnargs),
				 errhint("Use dlock_fence('lock name', 'token column') or dlock_fence('lock name column', 'token column', 'column').")));
	if (trigger->tgnargs == 3 &&
		strcmp(trigger->tgargs[2], "column") != 0 &&
		strcmp(trigger->tgargs[2], "name") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("third argument of dlock_fence() in trigger \"%s\" must be \"name\" or \"column\", not \"%s\"",
						trigger->tgname, trigger->tgargs[2])));
	by_column = trigger->tgnargs == 3 && strcmp(trigger->tgargs[2], "column") == 0;
	if (truncate && by_column)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("trigger \"%s\" on relation \"%s\" fires on TRUNCATE, which needs a constant lock name",
						trigger->tgname, RelationGetRelationName(cfg->rel)),
				 errhint("Use dlock_fence('lock name') for a BEFORE TRUNCATE trigger.")));

	cfg->token_column = trigger->tgnargs >= 2 ? pstrdup(trigger->tgargs[1]) : NULL;
	cfg->token_attnum = truncate ? 0 :
		FenceColumn(cfg->rel, cfg->token_column, "token", INT8OID, INT8OID);
	cfg->lock_attnum = 0;
	cfg->lock = NULL;
	if (by_column)
		cfg->lock_attnum = FenceColumn(cfg->rel, trigger->tgargs[0],
									   "lock name", TEXTOID, VARCHAROID);
	else
	{
		cfg->lock = cstring_to_text(trigger->tgargs[0]);
		DlockCheckName(cfg->lock);
	}
	cfg->truncate = truncate;
}

/*
 * The configuration of the trigger being fired: from fn_extra when this
 * FmgrInfo has already worked it out for the same trigger and relation
 * (see FenceConfig), else worked out now and kept there.
 */
static FenceConfig *
FenceGetConfig(FunctionCallInfo fcinfo, TriggerData *trigdata)
{
	FmgrInfo   *flinfo = fcinfo->flinfo;
	FenceConfig *cfg = (FenceConfig *) flinfo->fn_extra;
	Oid			relid = RelationGetRelid(trigdata->tg_relation);
	bool		truncate = TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event);

	FenceCheckFiring(trigdata);
	if (cfg == NULL || cfg->tgoid != trigdata->tg_trigger->tgoid ||
		cfg->relid != relid || cfg->truncate != truncate)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(flinfo->fn_mcxt);

		if (cfg == NULL)
		{
			cfg = (FenceConfig *) palloc0(sizeof(FenceConfig));
			flinfo->fn_extra = cfg;
		}
		/* Not a valid key until the arguments have passed. */
		cfg->tgoid = InvalidOid;
		FenceConfigure(trigdata, cfg);
		cfg->fn_oid = flinfo->fn_oid;
		cfg->relid = relid;
		cfg->tgoid = trigdata->tg_trigger->tgoid;
		MemoryContextSwitchTo(oldcxt);
	}
	cfg->rel = trigdata->tg_relation;
	return cfg;
}

/* The lock name of a row. */
static text *
FenceRowLock(const FenceConfig *cfg, HeapTuple tuple)
{
	Datum		value;
	bool		isnull;
	text	   *name;

	if (cfg->lock_attnum == 0)
		return cfg->lock;
	value = SPI_getbinval(tuple, RelationGetDescr(cfg->rel), cfg->lock_attnum,
						  &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("lock name must not be null"),
				 errdetail("Column \"%s\" of relation \"%s\" is null.",
						   NameStr(TupleDescAttr(RelationGetDescr(cfg->rel),
												 cfg->lock_attnum - 1)->attname),
						   RelationGetRelationName(cfg->rel))));
	name = DatumGetTextPP(value);
	DlockCheckName(name);
	return name;
}

/* The token a row carries; *isnull if none. */
static int64
FenceRowToken(const FenceConfig *cfg, HeapTuple tuple, bool *isnull)
{
	Datum		value = SPI_getbinval(tuple, RelationGetDescr(cfg->rel),
									  cfg->token_attnum, isnull);

	return *isnull ? 0 : DatumGetInt64(value);
}

/* Raise LK001 for a write that has no writer's token, saying why. */
static void
FenceRejectUndeclared(const FenceConfig *cfg, text *lock, FenceNeed need)
{
	char	   *name = text_to_cstring(lock);
	const char *col = cfg->token_column;

	StatsCountFenceRefusal(lock);
	ereport(ERROR,
			(errcode(ERRCODE_DLOCK_STALE_TOKEN),
			 errmsg("write to relation \"%s\" has no fencing token for lock \"%s\"",
					RelationGetRelationName(cfg->rel), name),
			 need == FENCE_NEED_NULL ?
			 errdetail("Column \"%s\" is null, and this transaction has declared no token for the lock.", col) :
			 need == FENCE_NEED_UNCHANGED ?
			 errdetail("The UPDATE leaves column \"%s\" unchanged, and this transaction has declared no token for the lock.", col) :
			 need == FENCE_NEED_OLD_LOCK ?
			 errdetail("The UPDATE moves the row off this lock, and this transaction has declared no token for it.") :
			 need == FENCE_NEED_DELETE ?
			 errdetail("A DELETE carries no token, and this transaction has declared no token for the lock.") :
			 need == FENCE_NEED_REFERENTIAL ?
			 errdetail("A token written by a referential action is not taken as the writer's, and this transaction has declared no token for the lock.") :
			 errdetail("A TRUNCATE carries no token, and this transaction has declared no token for the lock."),
			 errhint("Call dlock_assert(lock, token) earlier in the transaction to declare the token it writes with.")));
}

/*
 * The token this transaction declared for lock, and the role that declared
 * it, into *w; LK001 if none.
 */
static void
FenceDeclared(const FenceConfig *cfg, text *lock, FenceNeed need,
			  FenceWriter *w)
{
	if (!DeclaredTokenFor(lock, &w->token, &w->role))
		FenceRejectUndeclared(cfg, lock, need);
}

/*
 * The writer of a row that carries token (not NULL, and for an UPDATE a new
 * value), into *w: the token, vouched for by the current user; in a
 * referential action, the declared token, which the row must carry.
 */
static void
FenceCarried(const FenceConfig *cfg, text *lock, int64 token, FenceWriter *w)
{
	if (!InNoForceRLSOperation())
	{
		w->token = token;
		w->role = GetUserId();
		return;
	}
	FenceDeclared(cfg, lock, FENCE_NEED_REFERENTIAL, w);
	if (w->token != token)
	{
		StatsCountFenceRefusal(lock);
		ereport(ERROR,
				(errcode(ERRCODE_DLOCK_STALE_TOKEN),
				 errmsg("fencing token %lld written to relation \"%s\" by a referential action is not the token declared for lock \"%s\"",
						(long long) token, RelationGetRelationName(cfg->rel),
						text_to_cstring(lock)),
				 errdetail("This transaction declared token %lld for the lock; a referential action may write only the declared token.",
						   (long long) w->token)));
	}
}

/* A row's token never goes down: LK001 for a writer below it. */
static void
FenceNotBelow(text *lock, int64 writer, int64 row_token, bool row_isnull)
{
	if (!row_isnull && writer < row_token)
	{
		StatsCountFenceRefusal(lock);
		ereport(ERROR,
				(errcode(ERRCODE_DLOCK_STALE_TOKEN),
				 errmsg("stale fencing token %lld for lock \"%s\"",
						(long long) writer, text_to_cstring(lock)),
				 errdetail("The row was written with the newer token %lld.",
						   (long long) row_token)));
	}
}

/* Write token into the token column of tuple (a NULL filled in). */
static HeapTuple
FenceFillToken(const FenceConfig *cfg, HeapTuple tuple, int64 token)
{
	Oid			atttype = TupleDescAttr(RelationGetDescr(cfg->rel),
										cfg->token_attnum - 1)->atttypid;
	int			cols[1];
	Datum		values[1];
	bool		nulls[1];

	cols[0] = cfg->token_attnum;
	values[0] = Int64GetDatum(token);
	nulls[0] = false;
	/* The executor checked the row's value, not the one filled in. */
	if (get_typtype(atttype) == TYPTYPE_DOMAIN)
		domain_check(values[0], false, atttype, NULL, CurrentMemoryContext);
	return heap_modify_tuple_by_cols(tuple, RelationGetDescr(cfg->rel),
									 1, cols, values, nulls);
}

static void
FenceMoveSetLock(char *buf, int *len, text *lock)
{
	*len = VARSIZE_ANY_EXHDR(lock);
	memcpy(buf, VARDATA_ANY(lock), *len);
}

static bool
FenceMoveLockIs(const char *buf, int len, text *lock)
{
	return len == (int) VARSIZE_ANY_EXHDR(lock) &&
		memcmp(buf, VARDATA_ANY(lock), len) == 0;
}

/*
 * Does a dlock_fence trigger fire BEFORE DELETE FOR EACH ROW on rel?  Not
 * for triggers created the 1.0 way (BEFORE INSERT OR UPDATE).
 */
static bool
FenceRelFencesDelete(Relation rel, Oid fn_oid)
{
	TriggerDesc *trigdesc = rel->trigdesc;
	int			i;

	if (trigdesc == NULL || !trigdesc->trig_delete_before_row)
		return false;
	for (i = 0; i < trigdesc->numtriggers; i++)
	{
		Trigger    *t = &trigdesc->triggers[i];

		if (t->tgfoid == fn_oid && t->tgenabled != TRIGGER_DISABLED &&
			TRIGGER_FOR_ROW(t->tgtype) && TRIGGER_FOR_BEFORE(t->tgtype) &&
			TRIGGER_FOR_DELETE(t->tgtype))
			return true;
	}
	return false;
}

/* The root of the partition tree relid belongs to. */
static Oid
FencePartitionRoot(Oid relid)
{
	List	   *ancestors = get_partition_ancestors(relid);

	return ancestors == NIL ? relid : llast_oid(ancestors);
}

/*
 * The command a row trigger fires for: the command id of the active
 * snapshot, which the executor keeps for the whole statement, the INSERT
 * and DELETE halves of a partition move included, while a trigger's own
 * SPI queries (which advance the command counter) push snapshots of their
 * own and pop them.  A later statement of the transaction has another
 * command id when the UPDATE wrote (it did, if a move is pending).
 */
static CommandId
FenceMoveCommand(void)
{
	return ActiveSnapshotSet() ? GetActiveSnapshot()->curcid :
		GetCurrentCommandId(false);
}

/*
 * Is the pending move (at stage) one of this very statement, by the same
 * user?  An UPDATE that left the row where it was leaves the move pending
 * until the next write of the tree; it must not serve another statement.
 */
static bool
FenceMoveIsOurs(const FenceMove *move, FenceMoveStage stage)
{
	return move->stage == stage && move->cid == FenceMoveCommand() &&
		move->user == GetUserId();
}

/*
 * BEFORE INSERT: the writer's token is the row's, or for a NULL token the
 * declared one (filled in), or for the INSERT half of a partition move the
 * one its UPDATE checked.
 */
static HeapTuple
FenceInsert(const DlockRelations *rels, const FenceConfig *cfg,
			HeapTuple tuple)
{
	FenceMove  *move = FencePendingMove();
	text	   *lock = FenceRowLock(cfg, tuple);
	bool		isnull;
	int64		token = FenceRowToken(cfg, tuple, &isnull);
	FenceWriter w;

	if (FenceMoveIsOurs(move, FENCE_MOVE_INSERT) && !isnull &&
		token == move->new_token &&
		FenceMoveLockIs(move->new_lock, move->new_len, lock) &&
		cfg->rel->rd_rel->relispartition &&
		FencePartitionRoot(RelationGetRelid(cfg->rel)) ==
		FencePartitionRoot(move->relid))
	{
		w.token = move->new_writer;
		w.role = move->new_role;
	}
	else if (isnull)
	{
		FenceDeclared(cfg, lock, FENCE_NEED_NULL, &w);
		tuple = FenceFillToken(cfg, tuple, w.token);
	}
	else
		FenceCarried(cfg, lock, token, &w);
	move->stage = FENCE_MOVE_NONE;

	(void) FenceCheck(rels, lock, w.token, w.role, true);
	return tuple;
}

/*
 * The writer of the new row of an UPDATE, into *w: the new token if the
 * statement changes it, else the token declared for the new row's lock.
 */
static void
FenceUpdateWriter(const DlockRelations *rels, const FenceConfig *cfg,
				  text *new_lock, int64 old_token, bool old_isnull,
				  int64 new_token, bool new_isnull, FenceWriter *w)
{
	if (!new_isnull && (old_isnull || new_token != old_token))
		FenceCarried(cfg, new_lock, new_token, w);
	else if (!new_isnull && !rels->has_role_oid &&
			 !DeclaredTokenFor(new_lock, &w->token, &w->role))
	{
		/*
		 * Objects still at 1.0: 1.0's rule (the row's token) until ALTER
		 * EXTENSION dlock UPDATE, so that installing the 1.1 library breaks
		 * no application before its database is updated (the CHANGELOG and
		 * docs/operations.md say so).
		 */
		w->token = new_token;
		w->role = GetUserId();
	}
	else
		FenceDeclared(cfg, new_lock,
					  new_isnull ? FENCE_NEED_NULL : FENCE_NEED_UNCHANGED, w);
}

/*
 * BEFORE UPDATE: the new row's lock against the new token if the statement
 * changes it, else against the declared token; a changed lock name also
 * against the token declared for the old lock.  Tokens are compared per
 * lock (see above).
 */
static HeapTuple
FenceUpdate(const DlockRelations *rels, const FenceConfig *cfg,
			HeapTuple oldtuple, HeapTuple newtuple)
{
	FenceMove  *move = FencePendingMove();
	text	   *new_lock = FenceRowLock(cfg, newtuple);
	text	   *old_lock = FenceRowLock(cfg, oldtuple);
	bool		moved = !DlockNamesEqual(old_lock, new_lock);
	bool		old_isnull;
	bool		new_isnull;
	int64		old_token = FenceRowToken(cfg, oldtuple, &old_isnull);
	int64		new_token = FenceRowToken(cfg, newtuple, &new_isnull);
	FenceWriter nw;
	FenceWriter ow;

	move->stage = FENCE_MOVE_NONE;

	FenceUpdateWriter(rels, cfg, new_lock, old_token, old_isnull,
					  new_token, new_isnull, &nw);
	if (new_isnull || (moved && nw.token != new_token))
	{
		newtuple = FenceFillToken(cfg, newtuple, nw.token);
		new_token = nw.token;
	}
	if (!moved)
		FenceNotBelow(new_lock, nw.token, old_token, old_isnull);
	(void) FenceCheck(rels, new_lock, nw.token, nw.role, true);

	ow = nw;
	if (moved)
	{
		FenceDeclared(cfg, old_lock, FENCE_NEED_OLD_LOCK, &ow);
		FenceNotBelow(old_lock, ow.token, old_token, old_isnull);
		(void) FenceCheck(rels, old_lock, ow.token, ow.role, true);
	}

	if (cfg->rel->rd_rel->relispartition)
	{
		move->cid = FenceMoveCommand();
		move->user = GetUserId();
		move->relid = RelationGetRelid(cfg->rel);
		move->tid = oldtuple->t_self;
		move->old_writer = ow.token;
		move->old_role = ow.role;
		move->new_token = new_token;
		move->new_writer = nw.token;
		move->new_role = nw.role;
		FenceMoveSetLock(move->old_lock, &move->old_len, old_lock);
		FenceMoveSetLock(move->new_lock, &move->new_len, new_lock);
		/* Without a fenced DELETE (a 1.0 trigger) the INSERT comes next. */
		move->stage = FenceRelFencesDelete(cfg->rel, cfg->fn_oid) ?
			FENCE_MOVE_DELETE : FENCE_MOVE_INSERT;
	}
	return newtuple;
}

/*
 * BEFORE DELETE: the old row's lock against the declared token, or for the
 * DELETE half of a partition move against the token its UPDATE checked.
 */
static HeapTuple
FenceDelete(const DlockRelations *rels, const FenceConfig *cfg,
			HeapTuple oldtuple)
{
	FenceMove  *move = FencePendingMove();
	text	   *lock = FenceRowLock(cfg, oldtuple);
	bool		isnull;
	int64		token = FenceRowToken(cfg, oldtuple, &isnull);
	FenceWriter w;

	if (FenceMoveIsOurs(move, FENCE_MOVE_DELETE) &&
		move->relid == RelationGetRelid(cfg->rel) &&
		ItemPointerEquals(&move->tid, &oldtuple->t_self) &&
		FenceMoveLockIs(move->old_lock, move->old_len, lock))
	{
		w.token = move->old_writer;
		w.role = move->old_role;
		move->stage = FENCE_MOVE_INSERT;
	}
	else
	{
		move->stage = FENCE_MOVE_NONE;
		FenceDeclared(cfg, lock, FENCE_NEED_DELETE, &w);
	}
	FenceNotBelow(lock, w.token, token, isnull);
	(void) FenceCheck(rels, lock, w.token, w.role, true);
	return oldtuple;
}

/*
 * dlock_fence(lock, token_column [, kind]): the fencing trigger (see above).
 * lock is the lock name, or with kind 'column' the name of a text column
 * that holds the lock name.
 */
Datum
dlock_fence(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	const DlockRelations *rels;
	const FenceConfig *cfg;
	TriggerEvent event;
	FenceWriter w;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function \"dlock_fence\" was not called by trigger manager")));
	cfg = FenceGetConfig(fcinfo, trigdata);
	PreventCommandDuringRecovery("dlock_fence()");
	rels = DlockGetRelations(fcinfo);

	event = trigdata->tg_event;
	if (TRIGGER_FIRED_BY_INSERT(event))
		return PointerGetDatum(FenceInsert(rels, cfg, trigdata->tg_trigtuple));
	if (TRIGGER_FIRED_BY_UPDATE(event))
		return PointerGetDatum(FenceUpdate(rels, cfg, trigdata->tg_trigtuple,
										   trigdata->tg_newtuple));
	if (TRIGGER_FIRED_BY_DELETE(event))
		return PointerGetDatum(FenceDelete(rels, cfg, trigdata->tg_trigtuple));

	/* BEFORE TRUNCATE, for the whole table. */
	FencePendingMove()->stage = FENCE_MOVE_NONE;
	FenceDeclared(cfg, cfg->lock, FENCE_NEED_TRUNCATE, &w);
	(void) FenceCheck(rels, cfg->lock, w.token, w.role, true);
	return PointerGetDatum(NULL);
}
