/*-------------------------------------------------------------------------
 *
 * fence_ddl.c
 *		dlock_fence_ddl(): the event trigger that warns when DDL leaves a
 *		table with a dlock_fence trigger that does not fence it.
 *
 * A dlock_fence trigger fences a table only if it fires for every write of
 * an ordinary session: enabled in origin mode (or ALWAYS), with no column
 * list and no WHEN condition, on the table itself (row triggers of an
 * inheritance parent do not fire for its children's rows).  A trigger with
 * a column list or a WHEN condition is refused when it fires (fence.c), but
 * the writes it skips go through; a trigger enabled for replicas only never
 * fires in an ordinary session; a trigger enabled ALWAYS also fires in a
 * logical replication apply worker, which declares no tokens.  The view
 * dlock_fenced_tables reports all of these; this event trigger warns at the
 * moment the DDL makes one (CREATE TRIGGER, ALTER TABLE ... ENABLE [REPLICA
 * | ALWAYS] TRIGGER, CREATE TABLE ... INHERITS, ALTER TABLE ... INHERIT).
 * It only reads the catalogs and never raises an error of its own.
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_trigger.h"
#include "commands/event_trigger.h"
#include "commands/trigger.h"
#include "nodes/parsenodes.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "compat.h"
#include "dlock.h"

/* Is fn the dlock_fence() of the extension whose schema is nsp? */
static bool
FenceDdlIsFence(Oid fn, Oid nsp)
{
	char	   *name;

	if (get_func_namespace(fn) != nsp)
		return false;
	name = get_func_name(fn);
	return name != NULL && strcmp(name, "dlock_fence") == 0;
}

/* Does trigger t fence every write of an ordinary session to its table? */
static bool
FenceDdlFences(const Trigger *t)
{
	return (t->tgenabled == TRIGGER_FIRES_ON_ORIGIN ||
			t->tgenabled == TRIGGER_FIRES_ALWAYS) &&
		t->tgnattr == 0 && t->tgqual == NULL &&
		TRIGGER_FOR_ROW(t->tgtype) && TRIGGER_FOR_BEFORE(t->tgtype);
}

/*
 * Does relation relid have a fencing dlock_fence trigger of its own?  A
 * relation dropped meanwhile (a child found without a lock) counts as
 * fenced: there is nothing to warn about.
 */
static bool
FenceDdlRelFenced(Oid relid, Oid nsp)
{
	Relation	rel = try_relation_open(relid, AccessShareLock);
	TriggerDesc *trigdesc;
	bool		fenced = false;
	int			i;

	if (rel == NULL)
		return true;
	trigdesc = rel->trigdesc;
	for (i = 0; trigdesc != NULL && i < trigdesc->numtriggers; i++)
	{
		Trigger    *t = &trigdesc->triggers[i];

		if (FenceDdlIsFence(t->tgfoid, nsp) && FenceDdlFences(t))
			fenced = true;
	}
	relation_close(rel, AccessShareLock);
	return fenced;
}

/* Warn about what keeps trigger t of rel from fencing it. */
static void
FenceDdlWarnTrigger(Relation rel, const Trigger *t)
{
	const char *relname = RelationGetRelationName(rel);

	if (t->tgenabled == TRIGGER_FIRES_ON_REPLICA)
		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 errmsg("trigger \"%s\" on relation \"%s\" does not fence it",
						t->tgname, relname),
				 errdetail("A trigger enabled for replicas only fires only where session_replication_role is replica."),
				 errhint("Enable trigger \"%s\" in origin mode with ALTER TABLE ... ENABLE TRIGGER.", t->tgname)));
	if (t->tgenabled == TRIGGER_FIRES_ALWAYS)
		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 errmsg("trigger \"%s\" on relation \"%s\" also fires in logical replication apply workers",
						t->tgname, relname),
				 errdetail("An apply worker declares no tokens: the first replicated write to the table fails with SQLSTATE LK001 and stops the subscription."),
				 errhint("Enable trigger \"%s\" in origin mode with ALTER TABLE ... ENABLE TRIGGER.", t->tgname)));
	if (!(TRIGGER_FOR_BEFORE(t->tgtype) &&
		  (TRIGGER_FOR_ROW(t->tgtype) ||
		   (TRIGGER_FOR_TRUNCATE(t->tgtype) &&
			!TRIGGER_FOR_INSERT(t->tgtype) && !TRIGGER_FOR_UPDATE(t->tgtype) &&
			!TRIGGER_FOR_DELETE(t->tgtype)))))
		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 errmsg("trigger \"%s\" on relation \"%s\" does not fence it",
						t->tgname, relname),
				 errdetail("Function dlock_fence refuses a trigger that is not BEFORE ... FOR EACH ROW, nor BEFORE TRUNCATE ... FOR EACH STATEMENT."),
				 errhint("Re-create the trigger BEFORE INSERT OR UPDATE OR DELETE ... FOR EACH ROW, or BEFORE TRUNCATE ... FOR EACH STATEMENT.")));
	if (t->tgnattr > 0)
		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 errmsg("trigger \"%s\" on relation \"%s\" does not fence it",
						t->tgname, relname),
				 errdetail("The trigger has a column list: function dlock_fence refuses it when it fires, and an UPDATE that sets none of the listed columns is not fenced."),
				 errhint("Re-create the trigger BEFORE INSERT OR UPDATE OR DELETE, without OF.")));
	if (t->tgqual != NULL)
		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 errmsg("trigger \"%s\" on relation \"%s\" does not fence it",
						t->tgname, relname),
				 errdetail("The trigger has a WHEN condition: function dlock_fence refuses it when it fires, and a write for which the condition is not true is not fenced."),
				 errhint("Re-create the trigger without WHEN.")));
}

/*
 * Warn about every inheritance descendant of rel (a table that is not
 * partitioned: partitions get clones of their parent's row triggers) that
 * has no fencing dlock_fence trigger of its own.
 */
static void
FenceDdlWarnChildren(Relation rel, Oid nsp)
{
	List	   *children;
	ListCell   *lc;

	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
		return;
	children = find_all_inheritors(RelationGetRelid(rel), NoLock, NULL);
	foreach(lc, children)
	{
		Oid			child = lfirst_oid(lc);

		if (child != RelationGetRelid(rel) && !FenceDdlRelFenced(child, nsp) &&
			get_rel_name(child) != NULL)
			ereport(WARNING,
					(errcode(ERRCODE_WARNING),
					 errmsg("table \"%s\" inherits from \"%s\", whose dlock_fence trigger does not fence it",
							get_rel_name(child), RelationGetRelationName(rel)),
					 errdetail("Row triggers fire only on the table that holds the row."),
					 errhint("Create a dlock_fence trigger on table \"%s\" too.",
							 get_rel_name(child))));
	}
}

/*
 * Check the dlock_fence triggers of relid: the one named trigname, or all
 * of them for a NULL trigname; with children, also warn about inheritance
 * descendants that a fencing one leaves unfenced.
 */
static void
FenceDdlCheckRel(Oid relid, const char *trigname, bool children, Oid nsp)
{
	Relation	rel;
	TriggerDesc *trigdesc;
	bool		fences = false;
	int			i;

	if (!OidIsValid(relid))
		return;
	rel = relation_open(relid, AccessShareLock);
	trigdesc = rel->trigdesc;
	for (i = 0; trigdesc != NULL && i < trigdesc->numtriggers; i++)
	{
		Trigger    *t = &trigdesc->triggers[i];

		if (!FenceDdlIsFence(t->tgfoid, nsp) ||
			(trigname != NULL && strcmp(t->tgname, trigname) != 0))
			continue;
		FenceDdlWarnTrigger(rel, t);
		fences = fences || FenceDdlFences(t);
	}
	if (children && fences)
		FenceDdlWarnChildren(rel, nsp);
	relation_close(rel, AccessShareLock);
}

/*
 * relid has just become an inheritance child of the tables in parents (a
 * list of RangeVar): warn for each that a dlock_fence trigger fences while
 * relid has no fencing one of its own.
 */
static void
FenceDdlCheckNewChild(Oid relid, List *parents, Oid nsp)
{
	ListCell   *lc;

	if (!OidIsValid(relid) || get_rel_relispartition(relid) ||
		FenceDdlRelFenced(relid, nsp))
		return;
	foreach(lc, parents)
	{
		Oid			parent = RangeVarGetRelid(lfirst_node(RangeVar, lc),
											  NoLock, true);

		if (OidIsValid(parent) && FenceDdlRelFenced(parent, nsp))
			ereport(WARNING,
					(errcode(ERRCODE_WARNING),
					 errmsg("table \"%s\" inherits from \"%s\", whose dlock_fence trigger does not fence it",
							get_rel_name(relid), get_rel_name(parent)),
					 errdetail("Row triggers fire only on the table that holds the row."),
					 errhint("Create a dlock_fence trigger on table \"%s\" too.",
							 get_rel_name(relid))));
	}
}

/* ALTER TABLE: the subcommands that enable triggers or add a parent. */
static void
FenceDdlAlterTable(AlterTableStmt *stmt, Oid nsp)
{
	Oid			relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	ListCell   *lc;

	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = (AlterTableCmd *) lfirst(lc);

		switch (cmd->subtype)
		{
			case AT_EnableTrig:
			case AT_EnableAlwaysTrig:
			case AT_EnableReplicaTrig:
				FenceDdlCheckRel(relid, cmd->name, true, nsp);
				break;
			case AT_EnableTrigAll:
			case AT_EnableTrigUser:
				FenceDdlCheckRel(relid, NULL, true, nsp);
				break;
			case AT_AddInherit:
				FenceDdlCheckNewChild(relid, list_make1(cmd->def), nsp);
				break;
			default:
				break;
		}
	}
}

/*
 * dlock_fence_ddl(): event trigger on ddl_command_end for CREATE TRIGGER,
 * ALTER TABLE and CREATE TABLE (see above).
 */
Datum
dlock_fence_ddl(PG_FUNCTION_ARGS)
{
	EventTriggerData *trigdata = (EventTriggerData *) fcinfo->context;
	Oid			nsp;
	Node	   *parsetree;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function \"dlock_fence_ddl\" was not called by event trigger manager")));
	nsp = get_func_namespace(fcinfo->flinfo->fn_oid);
	parsetree = trigdata->parsetree;

	if (IsA(parsetree, CreateTrigStmt))
	{
		CreateTrigStmt *stmt = (CreateTrigStmt *) parsetree;

		FenceDdlCheckRel(RangeVarGetRelid(stmt->relation, NoLock, true),
						 stmt->trigname, true, nsp);
	}
	else if (IsA(parsetree, AlterTableStmt))
		FenceDdlAlterTable((AlterTableStmt *) parsetree, nsp);
	else if (IsA(parsetree, CreateStmt) &&
			 ((CreateStmt *) parsetree)->inhRelations != NIL &&
			 ((CreateStmt *) parsetree)->partbound == NULL)
	{
		CreateStmt *stmt = (CreateStmt *) parsetree;

		FenceDdlCheckNewChild(RangeVarGetRelid(stmt->relation, NoLock, true),
							  stmt->inhRelations, nsp);
	}
	PG_RETURN_NULL();
}
