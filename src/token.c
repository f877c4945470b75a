/*-------------------------------------------------------------------------
 *
 * token.c
 *		Fencing tokens: one durable counter for the whole database.
 *
 * The counter is @extschema@.dlock_token_seq (CACHE 1, NO CYCLE, so values
 * are handed out in order across backends and never twice).  A token is
 * drawn only after the name's hand-over lock is won, so busy calls burn
 * none.
 *
 * Crashes: the sequence's WAL is flushed before a token is returned, and
 * the transaction that draws a token is forced to commit synchronously,
 * locally and to synchronous standbys, whatever synchronous_commit the
 * caller set.  Otherwise a crash after an asynchronous commit could lose the
 * lease and the sequence's WAL, and hand the same token out again.
 *
 * Failover and point-in-time recovery: WAL that never reached the new
 * primary takes its tokens with it, and the sequence there may be behind
 * tokens the old primary handed out.  The timeline ID is the epoch that
 * survives: it rises at every promotion and every PITR.  Tokens drawn on
 * timeline T are never below (T - 1) << DLOCK_TOKEN_EPOCH_SHIFT: the first
 * draw on a new timeline moves the sequence up to that floor.  The sequence
 * holds whole tokens, so pg_dump and restore carry them over whatever the
 * timeline of the new cluster.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "commands/sequence.h"
#include "access/relation.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lock.h"
#include "replication/syncrep.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/syscache.h"

#include "compat.h"
#include "dlock.h"

/*
 * Tokens per timeline: 2^44 (about 1.7e13).  Timelines up to 2^19 fit in a
 * positive bigint.
 */
#define DLOCK_TOKEN_EPOCH_SHIFT 44

/* The lowest token that may be handed out on the current timeline. */
static int64
TokenFloor(void)
{
	TimeLineID	tli = DlockCurrentTimeLine();

	if (tli < 1 || tli >= ((TimeLineID) 1 << (63 - DLOCK_TOKEN_EPOCH_SHIFT)))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("timeline %u is out of the range of dlock tokens", tli)));
	return (int64) (tli - 1) << DLOCK_TOKEN_EPOCH_SHIFT;
}

/* Move the sequence up to floor, as its owner (callers may not setval). */
static void
TokenRaiseTo(Oid seqoid, int64 floor)
{
	HeapTuple	tuple;
	Oid			owner;
	Oid			save_userid;
	int			save_sec_context;

	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(seqoid));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", seqoid);
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(owner,
						   save_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	(void) DirectFunctionCall2(setval_oid, ObjectIdGetDatum(seqoid),
							   Int64GetDatum(floor));
	SetUserIdAndSecContext(save_userid, save_sec_context);
}

/* Did this transaction draw a token?  Its commit must then wait for sync standbys. */
static bool token_drawn = false;

/*
 * At commit of a transaction that drew a token, wait for synchronous
 * standbys whatever synchronous_commit says by then: a SET LOCAL or a
 * function's SET clause after the acquire must not undo it.  The setting
 * lasts for this commit only, like SET LOCAL.
 */
static void
TokenXactCallback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_PRE_COMMIT && token_drawn &&
		synchronous_commit < SYNCHRONOUS_COMMIT_REMOTE_FLUSH &&
		SyncRepStandbyNames != NULL && SyncRepStandbyNames[0] != '\0')
		(void) set_config_option("synchronous_commit", "on",
								 PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_LOCAL, true, 0, false);
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT)
		token_drawn = false;
}

void
TokenInit(void)
{
	RegisterXactCallback(TokenXactCallback, NULL);
}

/* Flush the WAL that made the sequence's current state durable. */
static void
TokenFlushSequence(Oid seqoid)
{
	Relation	seqrel = relation_open(seqoid, AccessShareLock);
	Buffer		buf = ReadBuffer(seqrel, 0);
	XLogRecPtr	lsn;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	lsn = PageGetLSN(BufferGetPage(buf));
	UnlockReleaseBuffer(buf);
	relation_close(seqrel, AccessShareLock);
	XLogFlush(lsn);
}

int64
TokenDraw(const DlockRelations *rels)
{
	int64		floor = TokenFloor();
	int64		token = nextval_internal(rels->token_seq, false);

	if (token <= floor)
	{
		LOCKTAG		tag;

		/*
		 * The first draws on a new timeline move the counter up to the
		 * floor.  Serialize them, or two backends could both set it to the
		 * floor and hand out the same token.
		 */
		SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, 0, 0, DLOCK_LOCKTAG_EPOCH);
		(void) LockAcquire(&tag, ExclusiveLock, false, false);
		token = nextval_internal(rels->token_seq, false);
		if (token <= floor)
		{
			TokenRaiseTo(rels->token_seq, floor);
			token = nextval_internal(rels->token_seq, false);
		}

		/*
		 * Given back at once: the counter moves outside transactions, so the
		 * next drawer sees it above the floor already.  Kept until the end of
		 * the transaction, it could close a deadlock with a release or renew
		 * of another name later in this transaction.
		 */
		LockRelease(&tag, ExclusiveLock, false);
	}

	/*
	 * The sequence writes WAL for 32 values ahead at a time, and the value
	 * just drawn may rest on another backend's record.  Flush up to the
	 * sequence page's LSN now, so that even a token of a transaction that
	 * never commits (the client saw it inside its open transaction, then the
	 * server crashed) is never handed out again.  Usually that WAL is
	 * flushed already and this costs a buffer lookup.
	 */
	TokenFlushSequence(rels->token_seq);

	/* The commit record is flushed before the commit returns. */
	ForceSyncCommit();
	token_drawn = true;
	return token;
}
