/*-------------------------------------------------------------------------
 *
 * undelivered.c
 *		Release, before the backend exits, a lease that an acquire took and
 *		committed but whose token could not be sent to the client.
 *
 * PostgreSQL sends a query's result rows into its output buffer while the
 * query runs and flushes that buffer after the transaction committed (at
 * ReadyForQuery at the latest), or earlier when it fills up or a notice is
 * sent.  A send that fails (internal_flush in pqcomm.c) drops the buffer,
 * sets ClientConnectionLost and raises an interrupt; the next
 * CHECK_FOR_INTERRUPTS ends the backend with FATAL "connection to client
 * lost", and proc_exit runs the before_shmem_exit callbacks.
 *
 * The rule.  The new tokens that acquires of the current transaction drew
 * are remembered (taken_now).  When the transaction commits, they become
 * undelivered if the result had not yet left the backend: its output was
 * still buffered (pq_is_send_pending) or a send had already failed
 * (ClientConnectionLost; a notice sent during the commit, such as the
 * warning of a cancelled wait for a synchronous standby, flushes the
 * buffer).  A transaction that ends later, or is open at exit, forgets
 * them if the backend read another message from the client before it
 * (NewClientMessage): the result may well have been flushed by then.
 * At exit, the backend releases the undelivered leases only if it exits
 * because a send to the client failed (ClientConnectionLost) and it read
 * no message since.  A transaction open at exit (one that fails with FATAL
 * is still open when this callback runs, before ShutdownPostgres aborts
 * it) is aborted first.
 * Each release runs in a transaction of its own, as
 * RemoveTempRelationsCallback (namespace.c) removes temporary tables, as
 * the role that acquired the lease, through @extschema@.dlock_release, with
 * synchronous_commit = local (a synchronous standby that is gone must not
 * keep the backend from exiting) and a lock_timeout.  An error cannot be
 * caught here: while proc_exit runs, errstart makes every ERROR a FATAL,
 * which is logged (never sent: whereToSendOutput is DestNone) and goes on
 * with the exit, ShutdownPostgres aborting the release's transaction; the
 * leases after it in the list stay held until their ttl.
 *
 * The rule errs towards keeping a lease: a result flushed but never read
 * by the client (a send into a closed TCP connection usually succeeds into
 * the kernel's buffer), or a later transaction run from the same query
 * string or pipeline before the flush, leave the lease held until its ttl
 * runs out.  A release never takes a lease from a client that read its
 * token, except when a notice flushed the result during the acquiring
 * transaction and a later send of that same transaction failed.
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "compat.h"
#include "dlock.h"

/* A new token an acquire drew, kept in TopMemoryContext. */
typedef struct TakenLease
{
	Oid			nspid;			/* the schema of the dlock_acquire called */
	Oid			userid;			/* the role it ran as */
	int64		token;
	char		name[FLEXIBLE_ARRAY_MEMBER];
} TakenLease;

static List *taken_now = NIL;
static List *undelivered = NIL;
static TimestampTz undelivered_stmt;	/* the message that committed them */
static bool exit_callback_registered = false;

static void UndeliveredXactCallback(XactEvent event, void *arg);
static void UndeliveredAtExit(int code, Datum arg);

/*
 * Remember the new token an acquire drew in this transaction.  The exit
 * callback is registered here, in the backend, not in _PG_init: a library
 * preloaded in the postmaster would register it in the postmaster, whose
 * exit callbacks its children drop (on_exit_reset), and registered after
 * InitPostgres it runs before ShutdownPostgres, with the backend whole.
 */
void
UndeliveredNoteAcquire(FunctionCallInfo fcinfo, text *name, int64 token)
{
	MemoryContext oldcxt;
	char	   *str;
	TakenLease *t;

	if (!exit_callback_registered)
	{
		RegisterXactCallback(UndeliveredXactCallback, NULL);
		before_shmem_exit(UndeliveredAtExit, (Datum) 0);
		exit_callback_registered = true;
	}
	oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	str = text_to_cstring(name);
	t = palloc(offsetof(TakenLease, name) + strlen(str) + 1);
	t->nspid = get_func_namespace(fcinfo->flinfo->fn_oid);
	t->userid = GetUserId();
	t->token = token;
	strcpy(t->name, str);
	pfree(str);
	taken_now = lappend(taken_now, t);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * Has the backend read another message from the client since the
 * transaction that left leases undelivered?  postgres.c sets the statement
 * start timestamp once per message (a simple query, or Parse, Bind and
 * Execute); transactions it runs on its own between messages (PostgreSQL
 * 14 delivers notifications after a commit in one) keep it.
 */
static bool
NewClientMessage(void)
{
	return GetCurrentStatementStartTimestamp() != undelivered_stmt;
}

/* Keep or forget the tokens as the rule at the top of this file says. */
static void
UndeliveredXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
			if (taken_now != NIL &&
				(ClientConnectionLost || pq_is_send_pending()))
			{
				list_free_deep(undelivered);
				undelivered = taken_now;
				undelivered_stmt = GetCurrentStatementStartTimestamp();
				taken_now = NIL;
				break;
			}
			/* FALLTHROUGH */
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
			list_free_deep(taken_now);
			taken_now = NIL;
			if (undelivered != NIL && NewClientMessage())
			{
				list_free_deep(undelivered);
				undelivered = NIL;
			}
			break;
		default:
			break;
	}
}

/* Release one undelivered lease as its acquirer; log it if released. */
static void
ReleaseUndelivered(const TakenLease *t)
{
	char	   *nspname = get_namespace_name(t->nspid);
	Oid			types[2] = {TEXTOID, INT8OID};
	Datum		values[2];
	bool		isnull;
	bool		released;
	Oid			saved_userid;
	int			saved_sec_context;

	if (nspname == NULL)
		return;					/* the extension is gone */
	values[0] = CStringGetTextDatum(t->name);
	values[1] = Int64GetDatum(t->token);
	GetUserIdAndSecContext(&saved_userid, &saved_sec_context);
	SetUserIdAndSecContext(t->userid,
						   saved_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	if (SPI_connect() != SPI_OK_CONNECT ||
		SPI_execute_with_args(psprintf("SELECT %s.dlock_release($1, $2)",
									   quote_identifier(nspname)),
							  2, types, values, NULL, false, 1) !=
		SPI_OK_SELECT)
		elog(ERROR, "could not run dlock_release");
	released = SPI_processed == 1 &&
		DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
								   SPI_tuptable->tupdesc, 1, &isnull)) &&
		!isnull;
	SPI_finish();
	SetUserIdAndSecContext(saved_userid, saved_sec_context);
	if (released)
		ereport(LOG,
				(errmsg("released lease \"%s\" because its token could not be sent to the client",
						t->name)));
}

/* The before_shmem_exit callback: release the undelivered leases. */
static void
UndeliveredAtExit(int code, Datum arg)
{
	List	   *leases = undelivered;
	ListCell   *lc;

	undelivered = NIL;
	if (leases == NIL || !ClientConnectionLost ||
		(IsTransactionOrTransactionBlock() && NewClientMessage()))
		return;
	/* A transaction failed in the same message: abort it first. */
	AbortOutOfAnyTransaction();
	/* Sent nothing more; and the lost connection must not end the release. */
	whereToSendOutput = DestNone;
	ClientConnectionLost = false;
	foreach(lc, leases)
	{
		StartTransactionCommand();
		SetConfigOption("synchronous_commit", "local", PGC_USERSET,
						PGC_S_SESSION);
		SetConfigOption("lock_timeout", "10s", PGC_USERSET, PGC_S_SESSION);
		PushActiveSnapshot(GetTransactionSnapshot());
		ReleaseUndelivered((TakenLease *) lfirst(lc));
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
}
