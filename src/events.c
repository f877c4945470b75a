/*-------------------------------------------------------------------------
 *
 * events.c
 *		Lease events: NOTIFY dlock with a JSON payload when a lease changes
 *		hands or is released, if dlock.events is on.
 *
 * The events are queued with Async_Notify, so PostgreSQL delivers them when
 * the transaction commits, in commit order, and drops them when it (or the
 * subtransaction that queued them) rolls back.  That is also their cost:
 * the commit of a transaction that sent a notification takes a cluster-wide
 * heavyweight lock (PreCommit_Notify locks object 0 of pg_database, so that
 * queue entries appear in commit order) and holds it across the commit's
 * WAL flush, so notifying commits are serialized and never group-commit.
 * Hence dlock.events is off by default, and when it is off the callers in
 * lease.c pay one boolean test (the inline DlockEventLease in dlock.h),
 * nothing more.
 *
 * That lock adds no deadlock to the protocol in src/README: it is taken at
 * commit, after every lock of the transaction, and its holder waits for
 * nothing but its own WAL flush (and a synchronous standby) before it lets
 * go, so a commit that waits for it holds dlock's locks a little longer,
 * never forever.
 *
 * Synchronous standbys.  PostgreSQL releases that lock only when the
 * commit is over, after its wait for the synchronous standbys
 * (RecordTransactionCommit calls SyncRepWaitForLSN before the locks are
 * released, on 14 as on 18).  dlock makes the commit of every acquisition
 * wait for them, whatever synchronous_commit the caller set (token.c,
 * ForceDurableCommit); with events on, a synchronous standby that stopped
 * answering would then make that one commit hold the lock, and every
 * notifying commit of the cluster would wait behind it, also those of
 * applications that chose synchronous_commit = local (and so would a commit
 * that sent a NOTIFY of its own, events or not).  So when a transaction
 * whose commit only dlock (not the caller's own synchronous_commit) makes
 * wait for the standbys commits, the commit itself
 * flushes locally only, and the wait for the standbys comes after the
 * transaction's locks are released (a resource-release callback of the
 * top-level commit, RESOURCE_RELEASE_AFTER_LOCKS): the call still returns
 * only once the standbys have the commit, as it does with events off, but
 * the lease and the event are visible to others from the local flush on,
 * and nobody else's notification waits for the standbys.  A caller whose
 * own synchronous_commit waits for the standbys (on, remote_write,
 * remote_apply) holds the lock across that wait as any notifying commit
 * does: PostgreSQL's behaviour, which dlock leaves alone.
 *
 * The payload is one JSON object,
 *
 *	{"lock": name, "event": "acquired" | "taken_over" | "released" | "revoked",
 *	 "token": n, "owner": owner}
 *
 * with "owner" only when the lease has one.  Names and owners are escaped
 * with escape_json, so any text makes valid JSON; both are at most 255
 * bytes, so the payload stays well under NOTIFY's limit (checked below at
 * compile time for the worst case, every byte escaped as \u00XX).  In a
 * SQL_ASCII database text is bytes in no known encoding, and escape_json
 * would copy bytes of 0x80 and above as they are, which is no valid JSON
 * (JSON text is UTF-8): there each such byte is escaped as \u00XX too, so
 * the name reads back as the characters U+0080 to U+00FF whose numbers
 * are its bytes (the bytes as Latin-1).
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "commands/async.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "replication/syncrep.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/resowner.h"

#include "compat.h"
#include "dlock.h"

/* The channel: LISTEN dlock. */
#define DLOCK_EVENT_CHANNEL		"dlock"

/*
 * The longest payload: the fixed text of the object, the longest event
 * name, a token of 20 characters, and a name and an owner of 255 bytes each
 * with every byte escaped as 6 characters (a control character becomes
 * \u00XX).  NOTIFY rejects a payload of BLCKSZ - NAMEDATALEN - 128 bytes or
 * more (async.c, NOTIFY_PAYLOAD_MAX_LENGTH).
 */
#define DLOCK_EVENT_MAX_PAYLOAD \
	(sizeof("{\"lock\": \"\", \"event\": \"taken_over\", \"token\": , \"owner\": \"\"}") + \
	 20 + 6 * (DLOCK_MAX_NAME_BYTES + DLOCK_MAX_OWNER_BYTES))

StaticAssertDecl(DLOCK_EVENT_MAX_PAYLOAD < BLCKSZ - NAMEDATALEN - 128,
				 "a dlock event payload could exceed NOTIFY's limit");

/* Must this commit wait for the synchronous standbys once its locks are gone? */
static bool standby_wait_after_locks = false;

static bool events_callbacks_registered = false;

/*
 * The wait for the synchronous standbys that the commit left out
 * (DlockEventsDeferStandbyWait), as synchronous_commit = on makes it, for
 * the commit record this transaction has just flushed.  As in the commit
 * itself, interrupts are held off: query cancel and termination end the
 * wait with PostgreSQL's WARNING that the transaction committed locally
 * but may not have been replicated.
 */
static void
EventsWaitForStandbys(void)
{
	int			nestlevel;

	if (XactLastCommitEnd == InvalidXLogRecPtr)
		return;
	nestlevel = NewGUCNestLevel();
	(void) set_config_option("synchronous_commit", "on", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	SyncRepWaitForLSN(XactLastCommitEnd, true);
	AtEOXact_GUC(true, nestlevel);
}

/* After the top-level commit released every lock: the deferred wait. */
static void
EventsResourceRelease(ResourceReleasePhase phase, bool isCommit,
					  bool isTopLevel, void *arg)
{
	if (phase != RESOURCE_RELEASE_AFTER_LOCKS || !isTopLevel ||
		!standby_wait_after_locks)
		return;
	standby_wait_after_locks = false;
	if (isCommit)
		EventsWaitForStandbys();
}

static void
EventsXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			standby_wait_after_locks = false;
			break;
		default:
			break;
	}
}

/*
 * Called at pre-commit by a transaction whose commit dlock makes wait for
 * the synchronous standbys (token.c) while the caller's synchronous_commit
 * would not (off or local): the commit flushes locally only and the wait
 * comes after its locks are released (see the top of this file).  Whether
 * or not the transaction queued a dlock event: one that sent a NOTIFY of its
 * own (a renewal, an acquire with events off) would otherwise hold NOTIFY's
 * cluster-wide lock across dlock's wait, and the caller asked for no wait
 * that others could see.
 */
void
DlockEventsDeferStandbyWait(void)
{
	/* Registered here, at pre-commit, they run for this very commit. */
	if (!events_callbacks_registered)
	{
		RegisterXactCallback(EventsXactCallback, NULL);
		RegisterResourceReleaseCallback(EventsResourceRelease, NULL);
		events_callbacks_registered = true;
	}
	standby_wait_after_locks = true;
}

/* The event's name in the payload. */
static const char *
DlockEventName(DlockEvent event)
{
	switch (event)
	{
		case DLOCK_EVENT_ACQUIRED:
			return "acquired";
		case DLOCK_EVENT_TAKEN_OVER:
			return "taken_over";
		case DLOCK_EVENT_RELEASED:
			return "released";
		case DLOCK_EVENT_REVOKED:
			return "revoked";
	}
	elog(ERROR, "unrecognized dlock event %d", (int) event);
	return NULL;				/* not reached */
}

/*
 * Append str to buf as a JSON string: escape_json, except in a SQL_ASCII
 * database, where every byte of 0x80 and above is escaped as \u00XX (see
 * the top of this file) and the rest as escape_json does.
 */
static void
DlockEscapeJson(StringInfo buf, const char *str)
{
	const unsigned char *p;

	if (GetDatabaseEncoding() != PG_SQL_ASCII)
	{
		escape_json(buf, str);
		return;
	}
	appendStringInfoChar(buf, '"');
	for (p = (const unsigned char *) str; *p != '\0'; p++)
	{
		if (*p >= 0x80 || *p < 0x20)
			appendStringInfo(buf, "\\u%04x", (unsigned int) *p);
		else if (*p == '"' || *p == '\\')
		{
			appendStringInfoChar(buf, '\\');
			appendStringInfoChar(buf, (char) *p);
		}
		else
			appendStringInfoChar(buf, (char) *p);
	}
	appendStringInfoChar(buf, '"');
}

/*
 * Queue NOTIFY dlock for an event of the lease called name, with its token
 * and owner (NULL: anonymous).  Sent at commit, dropped on rollback.
 */
void
DlockEventSend(text *name, DlockEvent event, int64 token, const char *owner)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoString(&buf, "{\"lock\": ");
	DlockEscapeJson(&buf, text_to_cstring(name));
	appendStringInfo(&buf, ", \"event\": \"%s\", \"token\": " INT64_FORMAT,
					 DlockEventName(event), token);
	if (owner != NULL)
	{
		appendStringInfoString(&buf, ", \"owner\": ");
		DlockEscapeJson(&buf, owner);
	}
	appendStringInfoChar(&buf, '}');

	Async_Notify(DLOCK_EVENT_CHANNEL, buf.data);
	pfree(buf.data);

}
