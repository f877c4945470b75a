/*-------------------------------------------------------------------------
 *
 * token.c
 *		Fencing tokens: one durable counter per database, and the jumps that
 *		keep its tokens rising whatever an operator does to the database.
 *
 * The guarantee (docs/tokens.md states it for users): every new acquisition
 * returns a token greater than every token the database handed out before,
 * for any name, and greater than the last token recorded in its name's row;
 * no two acquisitions share a token.
 *
 * Objects
 * -------
 * @extschema@.dlock_token_seq is the counter (CACHE 1, NO CYCLE, INCREMENT
 * above 0, MAXVALUE of bigint: values are handed out in order across
 * backends and never twice).  @extschema@.dlock_epoch has one row per jump:
 * the floor the counter jumped to, the history it jumped in, when (server
 * clock) and why.
 *
 * Histories
 * ---------
 * A history is what a run of the counter can tell apart from another: the
 * cluster's system identifier, the timeline, the database OID and the
 * counter's relfilenode.  Promotion and PITR change
 * the timeline; pg_dump and restore, pg_upgrade and a new cluster change the
 * system identifier or the database; CREATE DATABASE ... TEMPLATE changes
 * the database; DROP and CREATE EXTENSION, ALTER SEQUENCE ... RESTART and
 * anything else that rewrites the counter change its relfilenode.  A server
 * restart is not a new history: after a crash the WAL brings the counter
 * back, and an old primary started again after a failover stays below the
 * promoted standby (it does not jump; the standby jumped to the clock).
 *
 * A drawn token t is accepted, with no read or write beyond nextval and a
 * share lock held only around it (TokenNextval), when the backend's cached
 * last epoch row is of the current history, t > its floor, and t > the
 * name's last token.  Otherwise the draw jumps: under DLOCK_LOCKTAG_EPOCH
 * (one lock per database, held exclusively only while jumping), it reads
 * the epoch rows again (committed or still in progress, so that the first
 * draws of a new history jump once, not once each), and unless a row of the
 * current history now accepts a fresh draw, sets the counter to
 *
 *		F = max(t, last token of the name, highest token in the lease table,
 *				highest floor + 1, clock, highest floor + (clock - its jumped_at))
 *
 * (clock: the server's clock in microseconds since 1970) and inserts the
 * row (F, history, clock, reason) in the drawing transaction, whose commit
 * is forced to be synchronous.  dlock_rebase() makes the same jump on
 * demand.
 *
 * Proof sketch
 * ------------
 * Within one history the counter only rises: nextval, and a jump's setval
 * to F >= t, where t is the jump's own draw.  setval is not "raise to at
 * least": it would move the counter back under values that other backends
 * drew between t and the setval.  So every draw takes the jump lock (one
 * stripe of it) in share mode around its nextval (TokenNextval), and a
 * jump holds it (every stripe) exclusively from its draw of t until it has drawn after the setval: the
 * counter is still at t when it is set to F.  Every token is flushed before
 * it is returned (TokenFlushSequence), so crashes and uncommitted draws
 * cannot repeat one.  Hence no two draws of one history, for any names,
 * ever return the same token, whatever jumps, rebases, clock steps or
 * setvals above the counter happen.  A reset of the counter either rewrites
 * it (new relfilenode: new history), or (setval) puts it at or below the
 * floor (caught: t <= floor) or above it but below tokens handed out
 * (caught only per name by t > last; see Limits).
 *
 * Across histories: let history H start with a jump at clock time s to
 * F_H, and hand out n_H tokens, all <= F_H + n_H.  A later history H' that
 * starts from any earlier state of the database (a restore, a standby that
 * never saw H, a snapshot) jumps at time s' to F_H' >= clock(s') and, if it
 * still has the epoch row (F0, jumped_at T0) that H also started from,
 * F_H' >= F0 + (clock(s') - T0), while F_H = max(..., clock(s), F0 +
 * (clock(s) - T0)).  If fewer than one token per microsecond is drawn on
 * average (n_H < s' - s) and the clock of H' does not trail the clock of H
 * by more than (s' - s) - n_H, then F_H' > F_H + n_H: every token of H' is
 * above every token of H.  The last term carries this over states whose
 * floor is above the clock (1.0 tokens on timeline 102 and above, or a
 * clock that was once ahead): the jumps still move on by the time elapsed.
 * Tokens after a jump are above every row of the lease table, which
 * covers a logical-replication cut-over for every name it carried.
 *
 * Limits
 * ------
 * - The clock assumption above; a new server whose clock is behind by more
 *   than the time since the old history's last jump can repeat tokens that
 *   the old history handed out and that the new one never saw.
 * - A setval() above the floor but below tokens already handed out is
 *   caught only for names whose rows carry those tokens: other names can
 *   get tokens handed out before, until the next dlock_rebase() (which
 *   jumps above every lease row and by the time elapsed since the last
 *   jump).  Detecting it on the fast path would need a read of a second
 *   record of the highest token at every draw.  A setval() up is harmless.
 * - DROP EXTENSION removes the floor with dlock_epoch: the new extension's
 *   first jump meets the clock, but not a counter that was ahead of it
 *   (docs/tokens.md says what to carry over).
 * - Events that keep the history are not seen: a disk or VM snapshot
 *   rolled back, a base backup started without recovery, a second promotion
 *   onto a timeline already used.  Call dlock_rebase() after them.
 * - Bigint holds microseconds since 1970 for about 290,000 years.
 * - Tokens jump by the elapsed time at each history change: they are
 *   neither dense nor small.
 *
 * The 1.0 shape
 * -------------
 * A database whose objects are still 1.0 (no dlock_epoch table) keeps 1.0's
 * scheme until ALTER EXTENSION dlock UPDATE: tokens on timeline T are at
 * least (T - 1) << 44, plus the per-name floor.  Its first draw after the
 * update jumps.
 *
 * Durable commits
 * ---------------
 * ForceDurableCommit() makes the calling transaction's commit flushed
 * locally and, with synchronous standbys configured, wait for them, whatever
 * synchronous_commit the caller set; acquire and renew both call it.  A
 * transaction that queued a lease event, whose caller's setting is off or
 * local, waits for the standbys after its locks are released instead
 * (events.c), so that NOTIFY's commit lock is not held across that wait.
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_sequence.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "commands/sequence.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "replication/syncrep.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "dlock.h"

/* 1.0 shape: tokens per timeline, 2^44.  Timelines up to 2^19 fit. */
#define DLOCK_TOKEN_EPOCH_SHIFT 44

/* Columns of @extschema@.dlock_epoch, in order. */
#define Anum_dlock_epoch_floor				1
#define Anum_dlock_epoch_system_identifier	2
#define Anum_dlock_epoch_timeline			3
#define Anum_dlock_epoch_database_oid		4
#define Anum_dlock_epoch_counter_relfilenode 5
#define Anum_dlock_epoch_jumped_at			6
#define Anum_dlock_epoch_reason				7
#define Natts_dlock_epoch					7

/* What tells one history of the counter from another (see above). */
typedef struct TokenHistory
{
	int64		system_identifier;
	int64		timeline;
	Oid			database_oid;
	Oid			counter_relfilenode;
} TokenHistory;

/* The latest epoch row: the one with the highest floor. */
typedef struct TokenEpoch
{
	bool		found;
	int64		floor;
	TokenHistory history;
	TimestampTz jumped_at;
} TokenEpoch;

/*
 * Per-backend state.  token_state_valid: the relations below were checked
 * (persistence, counter settings) for the counter token_state_seq; it is
 * cleared by any invalidation of the three relations or of pg_sequence.
 * epoch_cache: the latest epoch row this backend saw or wrote.
 */
static bool token_state_valid = false;
static Oid	token_state_seq = InvalidOid;
static Oid	token_state_lease = InvalidOid;
static Oid	token_state_epoch = InvalidOid;	/* InvalidOid: the 1.0 shape */
static TokenEpoch epoch_cache;

/* Must this transaction's commit be durable (ForceDurableCommit)? */
static bool commit_durable = false;

static void
TokenRelcacheCallback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == token_state_seq ||
		relid == token_state_lease ||
		(OidIsValid(token_state_epoch) && relid == token_state_epoch))
	{
		token_state_valid = false;
		epoch_cache.found = false;
	}
}

static void
TokenSyscacheCallback(Datum arg, int cacheid, uint32 hashvalue)
{
	token_state_valid = false;
}

/*
 * At commit of a transaction that must be durable, wait for synchronous
 * standbys whatever synchronous_commit says by then: a SET LOCAL or a
 * function's SET clause after the call must not undo it.  The setting
 * lasts for this commit only, like SET LOCAL.
 */
static void
TokenXactCallback(XactEvent event, void *arg)
{
	/*
	 * A transaction whose caller wants no standby wait (local or off) waits
	 * for the standbys after its commit released its locks instead, so that
	 * NOTIFY's commit lock (its own NOTIFY's or a lease event's) is not held
	 * across that wait (events.c).  At remote_write it is raised to on.
	 */
	if (event == XACT_EVENT_PRE_COMMIT && commit_durable &&
		synchronous_commit < SYNCHRONOUS_COMMIT_REMOTE_FLUSH &&
		SyncRepStandbyNames != NULL && SyncRepStandbyNames[0] != '\0')
	{
		if (synchronous_commit <= SYNCHRONOUS_COMMIT_LOCAL_FLUSH)
			DlockEventsDeferStandbyWait();
		else
			(void) set_config_option("synchronous_commit", "on",
									 PGC_USERSET, PGC_S_SESSION,
									 GUC_ACTION_LOCAL, true, 0, false);
	}
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT)
		commit_durable = false;
}

void
TokenInit(void)
{
	RegisterXactCallback(TokenXactCallback, NULL);
	CacheRegisterRelcacheCallback(TokenRelcacheCallback, (Datum) 0);
	CacheRegisterSyscacheCallback(SEQRELID, TokenSyscacheCallback, (Datum) 0);
}

/*
 * The commit of the calling transaction is flushed before it returns and,
 * with synchronous standbys configured, waits for them, whatever the
 * caller's synchronous_commit.  For every change a crash or a failover must
 * not take back: a new token, a renewed expiry.
 */
void
ForceDurableCommit(void)
{
	ForceSyncCommit();
	commit_durable = true;
}

/* Refuse relations that a crash could empty or that die with the session. */
static void
TokenCheckPersistence(Oid relid)
{
	char		persistence = get_rel_persistence(relid);

	if (persistence == RELPERSISTENCE_UNLOGGED)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("relation \"%s\" of extension \"dlock\" is unlogged",
						get_rel_name(relid)),
				 errdetail("A crash empties an unlogged relation, and tokens handed out before it could be handed out again."),
				 errhint("Make it logged again with ALTER TABLE or ALTER SEQUENCE ... SET LOGGED.")));
	if (persistence != RELPERSISTENCE_PERMANENT)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("relation \"%s\" of extension \"dlock\" is temporary",
						get_rel_name(relid)),
				 errdetail("Tokens kept in a temporary relation would be handed out again by the next session.")));
}

/* Refuse counter settings under which a token could repeat or go down. */
static void
TokenCheckCounter(Oid seqoid)
{
	HeapTuple	tuple;
	Form_pg_sequence seq;
	const char *name = get_rel_name(seqoid);

	tuple = SearchSysCache1(SEQRELID, ObjectIdGetDatum(seqoid));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for sequence %u", seqoid);
	seq = (Form_pg_sequence) GETSTRUCT(tuple);

	if (seq->seqcache > 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("sequence \"%s\" of extension \"dlock\" could hand out tokens out of order", name),
				 errdetail("Its CACHE is %lld; backends would hand out cached values out of order.",
						   (long long) seq->seqcache),
				 errhint("Restore the settings with ALTER SEQUENCE ... AS bigint INCREMENT 1 NO MAXVALUE CACHE 1 NO CYCLE.")));
	if (seq->seqcycle)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("sequence \"%s\" of extension \"dlock\" could hand out a token twice", name),
				 errdetail("It is set to CYCLE, so it would start again at its minimum."),
				 errhint("Restore the settings with ALTER SEQUENCE ... AS bigint INCREMENT 1 NO MAXVALUE CACHE 1 NO CYCLE.")));
	if (seq->seqincrement <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("sequence \"%s\" of extension \"dlock\" could hand out tokens that go down", name),
				 errdetail("Its INCREMENT is %lld; tokens must rise.",
						   (long long) seq->seqincrement),
				 errhint("Restore the settings with ALTER SEQUENCE ... AS bigint INCREMENT 1 NO MAXVALUE CACHE 1 NO CYCLE.")));
	if (seq->seqmax < PG_INT64_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("sequence \"%s\" of extension \"dlock\" could run out of tokens", name),
				 errdetail("Its MAXVALUE is %lld; tokens need the whole range of bigint.",
						   (long long) seq->seqmax),
				 errhint("Restore the settings with ALTER SEQUENCE ... AS bigint INCREMENT 1 NO MAXVALUE CACHE 1 NO CYCLE.")));
	ReleaseSysCache(tuple);
}

/*
 * Lock the epoch table for one look (TokenCheckEpochTable, TokenLoadEpoch),
 * waiting no longer than the deadline of w (NULL: as long as it takes);
 * given back with RelationLockGiveBackMode(relid, AccessShareLock).
 */
static bool
TokenLockForLook(Oid relid, const DlockWait *w)
{
	return WaitForRelationLockMode(relid, AccessShareLock, w);
}

/*
 * The epoch table must have the columns this library reads and writes.
 * False when the deadline of w came before its lock.
 */
static bool
TokenCheckEpochTable(Oid relid, const DlockWait *w)
{
	Relation	rel;
	int			natts;

	if (!TokenLockForLook(relid, w))
		return false;
	rel = table_open(relid, AccessShareLock);
	natts = RelationGetDescr(rel)->natts;
	table_close(rel, AccessShareLock);
	RelationLockGiveBackMode(relid, AccessShareLock);
	if (natts != Natts_dlock_epoch)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("relation \"dlock_epoch\" of extension \"dlock\" has %d columns, but this version of the library expects %d",
						natts, Natts_dlock_epoch),
				 errhint("Run ALTER EXTENSION dlock UPDATE.")));
	return true;
}

/*
 * Check the relations tokens depend on, once per backend and again after
 * any change to them; find the epoch table (none: the 1.0 shape).  A 1.0
 * database looks for it at every draw, so that ALTER EXTENSION UPDATE takes
 * effect at once in every backend.  The epoch table's lock is waited for no
 * longer than the deadline of w (NULL: as long as it takes): false when the
 * deadline came first.
 */
static bool
TokenPrepare(const DlockRelations *rels, const DlockWait *w)
{
	Oid			epoch;

	if (token_state_valid && token_state_seq == rels->token_seq &&
		OidIsValid(token_state_epoch))
		return true;
	if (!token_state_valid || token_state_seq != rels->token_seq)
	{
		token_state_valid = false;
		epoch_cache.found = false;
		TokenCheckPersistence(rels->lease_table);
		TokenCheckPersistence(rels->token_seq);
		TokenCheckCounter(rels->token_seq);
		token_state_seq = rels->token_seq;
		token_state_lease = rels->lease_table;
		token_state_epoch = InvalidOid;
		token_state_valid = true;
	}
	/* Known only once checked, so that a failed check is made again. */
	token_state_epoch = InvalidOid;
	epoch = get_relname_relid("dlock_epoch",
							  get_rel_namespace(rels->token_seq));
	if (OidIsValid(epoch))
	{
		TokenCheckPersistence(epoch);
		if (!TokenCheckEpochTable(epoch, w))
			return false;
	}
	token_state_epoch = epoch;
	return true;
}

/* The history this backend draws in now. */
static void
TokenCurrentHistory(Relation seqrel, TokenHistory *h)
{
	memset(h, 0, sizeof(TokenHistory));
	h->system_identifier = (int64) GetSystemIdentifier();
	h->timeline = (int64) DlockCurrentTimeLine();
	h->database_oid = MyDatabaseId;
	h->counter_relfilenode = DlockRelFileNumber(seqrel);
}

static bool
TokenHistoryEqual(const TokenHistory *a, const TokenHistory *b)
{
	return a->system_identifier == b->system_identifier &&
		a->timeline == b->timeline &&
		a->database_oid == b->database_oid &&
		a->counter_relfilenode == b->counter_relfilenode;
}

/* Why a jump: the first component of the history that changed. */
static const char *
TokenJumpReason(const TokenEpoch *last, const TokenHistory *cur)
{
	if (!last->found)
		return "first";
	if (last->history.system_identifier != cur->system_identifier)
		return "system";
	if (last->history.database_oid != cur->database_oid)
		return "database";
	if (last->history.timeline != cur->timeline)
		return "timeline";
	if (last->history.counter_relfilenode != cur->counter_relfilenode)
		return "counter";
	return NULL;
}

/*
 * Read the epoch rows: the latest one (highest floor) into *epoch.  Rows of
 * transactions still in progress count: their jump has already moved the
 * counter.
 */
static void
TokenLoadEpoch(Oid epoch_table, TokenEpoch *epoch)
{
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tuple;
	SnapshotData dirty;

	memset(epoch, 0, sizeof(TokenEpoch));
	InitDirtySnapshot(dirty);
	rel = table_open(epoch_table, AccessShareLock);
	scan = table_beginscan(rel, &dirty, 0, NULL);
	while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Datum		values[Natts_dlock_epoch];
		bool		nulls[Natts_dlock_epoch];
		int64		floor;
		int			i;

		heap_deform_tuple(tuple, RelationGetDescr(rel), values, nulls);
		for (i = 0; i < Anum_dlock_epoch_jumped_at; i++)
			if (nulls[i])
				break;
		if (i < Anum_dlock_epoch_jumped_at)
			continue;			/* not a row dlock wrote */
		floor = DatumGetInt64(values[Anum_dlock_epoch_floor - 1]);
		if (epoch->found && floor <= epoch->floor)
			continue;
		epoch->found = true;
		epoch->floor = floor;
		epoch->history.system_identifier =
			DatumGetInt64(values[Anum_dlock_epoch_system_identifier - 1]);
		epoch->history.timeline =
			DatumGetInt64(values[Anum_dlock_epoch_timeline - 1]);
		epoch->history.database_oid =
			DatumGetObjectId(values[Anum_dlock_epoch_database_oid - 1]);
		epoch->history.counter_relfilenode =
			DatumGetObjectId(values[Anum_dlock_epoch_counter_relfilenode - 1]);
		epoch->jumped_at =
			DatumGetTimestampTz(values[Anum_dlock_epoch_jumped_at - 1]);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
}

/* The highest token in any version of any lease row (0 if none). */
static int64
TokenHighestLease(Oid lease_table)
{
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tuple;
	int64		highest = 0;

	rel = table_open(lease_table, AccessShareLock);
	scan = table_beginscan(rel, SnapshotAny, 0, NULL);
	while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		bool		isnull;
		Datum		d = heap_getattr(tuple, Anum_dlock_lease_token,
									 RelationGetDescr(rel), &isnull);

		if (!isnull && DatumGetInt64(d) > highest)
			highest = DatumGetInt64(d);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	return highest;
}

/* The owner of relid: callers may not write dlock's objects, its owner may. */
static Oid
TokenOwnerOf(Oid relid)
{
	HeapTuple	tuple;
	Oid			owner;

	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	return owner;
}

/* Move the counter to value, as its owner. */
static void
TokenSetCounter(Oid seqoid, int64 value)
{
	Oid			save_userid;
	int			save_sec_context;

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(TokenOwnerOf(seqoid),
						   save_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	(void) DirectFunctionCall2(setval_oid, ObjectIdGetDatum(seqoid),
							   Int64GetDatum(value));
	SetUserIdAndSecContext(save_userid, save_sec_context);
}

/*
 * Insert the epoch row of a jump, as the table's owner, through SPI so that
 * every index, trigger and policy a superuser put on the table is honoured.
 */
static void
TokenRecordEpoch(Oid epoch_table, int64 floor, const TokenHistory *h,
				 TimestampTz jumped_at, const char *reason)
{
	Oid			save_userid;
	int			save_sec_context;
	char	   *query;
	Oid			argtypes[7] = {INT8OID, INT8OID, INT8OID, OIDOID, OIDOID,
	TIMESTAMPTZOID, TEXTOID};
	Datum		args[7];

	query = psprintf("INSERT INTO %s.%s VALUES ($1, $2, $3, $4, $5, $6, $7)",
					 quote_identifier(get_namespace_name(get_rel_namespace(epoch_table))),
					 quote_identifier(get_rel_name(epoch_table)));
	args[0] = Int64GetDatum(floor);
	args[1] = Int64GetDatum(h->system_identifier);
	args[2] = Int64GetDatum(h->timeline);
	args[3] = ObjectIdGetDatum(h->database_oid);
	args[4] = ObjectIdGetDatum(h->counter_relfilenode);
	args[5] = TimestampTzGetDatum(jumped_at);
	args[6] = CStringGetTextDatum(reason);

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(TokenOwnerOf(epoch_table),
						   save_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args(query, 7, argtypes, args, NULL, false, 0) !=
		SPI_OK_INSERT)
		elog(ERROR, "could not record a dlock epoch");
	SPI_finish();
	SetUserIdAndSecContext(save_userid, save_sec_context);
}

/*
 * Draws and jumps are ordered by the jump lock: a jump holds it exclusively
 * from its first draw until it has moved the counter and drawn again, and
 * every other draw holds it in share mode around its nextval, so that the
 * jump's setval, which is not "raise to at least", never moves the counter
 * under a value another backend drew meanwhile.  So that draws do not all
 * meet on one lock-manager entry, the lock has TOKEN_JUMP_STRIPES stripes
 * (field3 of the jump tag): a draw takes the one of its process, a jump
 * takes them all, in order.
 *
 * The lock is held only for those few steps, which wait for no other
 * transaction (a jump takes every relation lock it needs before it,
 * TokenJumpLockRelations), and is given back before the draw returns.  It
 * is therefore always waited for, whatever the caller's deadline: an
 * acquire with wait = 0 of a free name must not answer busy because
 * another backend drew or jumped at the same moment
 * (test/t/016_token_unique.pl).
 */
#define TOKEN_JUMP_STRIPES 16

static void
TokenJumpStripeLock(int stripe, LOCKMODE mode)
{
	LOCKTAG		tag;

	TokenJumpTag(&tag, stripe);
	NameLockWait(&tag, mode);
}

/* Take every stripe exclusively, in order. */
static void
TokenJumpLock(void)
{
	int			i;

	for (i = 0; i < TOKEN_JUMP_STRIPES; i++)
		TokenJumpStripeLock(i, ExclusiveLock);
}

static void
TokenJumpUnlock(void)
{
	LOCKTAG		tag;
	int			i;

	for (i = TOKEN_JUMP_STRIPES - 1; i >= 0; i--)
	{
		TokenJumpTag(&tag, i);
		NameLockGiveBack(&tag, ExclusiveLock);
	}
}

/*
 * Draw from the counter on the fast path, in share mode (see above),
 * waiting for a jump in progress.  The caller holds the counter's lock.
 */
static int64
TokenNextval(Oid seqoid)
{
	LOCKTAG		tag;
	int64		t;
	int			stripe = MyProcPid % TOKEN_JUMP_STRIPES;

	TokenJumpStripeLock(stripe, ShareLock);
	t = nextval_internal(seqoid, false);
	TokenJumpTag(&tag, stripe);
	NameLockGiveBack(&tag, ShareLock);
	return t;
}

/*
 * Take the locks a jump needs on dlock's relations, which it keeps until
 * the transaction ends, waiting no longer than the deadline of w: the lease
 * table (read), the epoch table and its indexes (a row is inserted), and
 * the counter (set).  False when the deadline came first.
 */
static bool
TokenJumpLockRelations(const DlockRelations *rels, const DlockWait *w)
{
	Relation	epoch;
	bool		granted;

	if (!WaitForRelationLockMode(rels->lease_table, AccessShareLock, w) ||
		!WaitForRelationLockMode(token_state_epoch, RowExclusiveLock, w) ||
		!WaitForRelationLockMode(rels->token_seq, RowExclusiveLock, w))
		return false;
	epoch = table_open(token_state_epoch, NoLock);
	granted = WaitForIndexLocks(epoch, w);
	table_close(epoch, NoLock);
	return granted;
}

/* a + b, saturating at the top of bigint. */
static int64
TokenAdd(int64 a, int64 b)
{
	if (b > 0 && a > PG_INT64_MAX - b)
		return PG_INT64_MAX - 1;
	return a + b;
}

/*
 * The jump of the scheme above: returns a token drawn after it, and sets
 * *floor to the floor it is above.  Without reason (a draw that did not
 * match), the jump is skipped if a jump of this history, maybe by another
 * backend that has not committed yet, now accepts a fresh draw.
 */
static int64
TokenJump(const DlockRelations *rels, Relation seqrel, int64 last,
		  const char *reason, int64 *floor, const DlockWait *w)
{
	TokenHistory cur;
	TokenEpoch	latest;
	TimestampTz now;
	int64		t;
	int64		f;

	/*
	 * Every draw waits while the jump lock is held: take the table locks of
	 * the jump first, so that no one's DDL on them is waited for under it.
	 * They are waited for no longer than the deadline of w: 0 when it came
	 * first (the caller's draw is then never handed out).
	 */
	if (!TokenJumpLockRelations(rels, w))
		return 0;
	TokenJumpLock();

	TokenCurrentHistory(seqrel, &cur);
	TokenLoadEpoch(token_state_epoch, &latest);
	t = nextval_internal(rels->token_seq, false);
	if (reason == NULL && latest.found &&
		TokenHistoryEqual(&latest.history, &cur) &&
		t > latest.floor && t > last)
	{
		epoch_cache = latest;
		TokenJumpUnlock();
		*floor = latest.floor;
		return t;
	}
	if (reason == NULL)
		reason = TokenJumpReason(&latest, &cur);
	if (reason == NULL)
		reason = t <= last ? "lease" : "floor";

	now = GetCurrentTimestamp();
	f = Max(t, last);
	f = Max(f, TokenHighestLease(rels->lease_table));
	f = Max(f, TokenAdd(now, (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY));
	if (latest.found)
	{
		f = Max(f, TokenAdd(latest.floor, 1));
		f = Max(f, TokenAdd(latest.floor, now - latest.jumped_at));
	}
	/*
	 * No other draw runs while the lock is held (TokenNextval), so the
	 * counter is still at t: f >= t moves it forward or leaves it.
	 */
	if (f > t)
		TokenSetCounter(rels->token_seq, f);
	t = nextval_internal(rels->token_seq, false);
	TokenRecordEpoch(token_state_epoch, f, &cur, now, reason);

	epoch_cache.found = true;
	epoch_cache.floor = f;
	epoch_cache.history = cur;
	epoch_cache.jumped_at = now;
	TokenJumpUnlock();
	*floor = f;
	return t;
}

/* 1.0 shape: the lowest token that may be handed out on this timeline. */
static int64
TokenTimelineFloor(void)
{
	TimeLineID	tli = DlockCurrentTimeLine();

	if (tli < 1 || tli >= ((TimeLineID) 1 << (63 - DLOCK_TOKEN_EPOCH_SHIFT)))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("timeline %u is out of the range of dlock tokens", tli)));
	return (int64) (tli - 1) << DLOCK_TOKEN_EPOCH_SHIFT;
}

/* 1.0 shape: move the counter past floor, serialized like a jump. */
static int64
TokenRaise10(const DlockRelations *rels, int64 floor)
{
	int64		t;

	TokenJumpLock();
	t = nextval_internal(rels->token_seq, false);
	if (t < floor)
	{
		/* The counter is at t: no draw runs meanwhile (TokenNextval). */
		TokenSetCounter(rels->token_seq, floor);
		t = nextval_internal(rels->token_seq, false);
	}
	TokenJumpUnlock();
	return t;
}

/*
 * Flush the WAL that made the counter's current state durable.  The
 * sequence writes WAL for 32 values ahead at a time, and the value just
 * drawn may rest on another backend's record, or on a jump's setval: flush
 * up to the page's LSN, so that even a token of a transaction that never
 * commits is never handed out again.  Usually that WAL is flushed already
 * and this costs a buffer lookup.
 */
static void
TokenFlushSequence(Relation seqrel)
{
	Buffer		buf = ReadBuffer(seqrel, 0);
	XLogRecPtr	lsn;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	lsn = PageGetLSN(BufferGetPage(buf));
	UnlockReleaseBuffer(buf);
	XLogFlush(lsn);
}

/*
 * A new token for a name whose last token is last (0 if none): above every
 * token this database handed out before, and above last.  Every lock the
 * draw takes (the counter, the epoch table, the jump lock) is waited for no
 * longer than the deadline of w, as the rest of an acquire: 0 when the
 * deadline came first, and nothing was handed out.
 */
int64
TokenDraw(const DlockRelations *rels, int64 last, const DlockWait *w)
{
	Relation	seqrel;
	int64		t;
	int64		floor;

	/* nextval's own lock: an ALTER SEQUENCE holds it till it commits. */
	if (!WaitForRelationLockMode(rels->token_seq, RowExclusiveLock, w) ||
		!TokenPrepare(rels, w))
		return 0;
	if (OidIsValid(token_state_epoch) && !epoch_cache.found)
	{
		if (!TokenLockForLook(token_state_epoch, w))
			return 0;
		TokenLoadEpoch(token_state_epoch, &epoch_cache);
		RelationLockGiveBackMode(token_state_epoch, AccessShareLock);
	}
	t = TokenNextval(rels->token_seq);
	seqrel = relation_open(rels->token_seq, AccessShareLock);

	if (!OidIsValid(token_state_epoch))
	{
		floor = Max(TokenTimelineFloor(), last);
		if (t <= floor)
			t = TokenRaise10(rels, floor);
	}
	else
	{
		TokenHistory cur;

		TokenCurrentHistory(seqrel, &cur);
		if (!epoch_cache.found ||
			!TokenHistoryEqual(&epoch_cache.history, &cur) ||
			t <= epoch_cache.floor || t <= last)
			t = TokenJump(rels, seqrel, last, NULL, &floor, w);
	}
	if (t == 0)
	{
		relation_close(seqrel, AccessShareLock);
		return 0;
	}

	TokenFlushSequence(seqrel);
	relation_close(seqrel, AccessShareLock);
	ForceDurableCommit();
	return t;
}

/*
 * The highest at_least dlock_rebase accepts: 2^62, which leaves the
 * counter more than 2^62 draws before its maximum (2^63 - 1), where every
 * acquisition would fail.  The clock scheme's tokens are near 2^51.
 */
#define DLOCK_REBASE_MAX	(INT64CONST(1) << 62)

/*
 * The argument of dlock_rebase(at_least): not null, not negative, not above
 * DLOCK_REBASE_MAX.  Zero without it.
 */
static int64
TokenAtLeastArg(FunctionCallInfo fcinfo)
{
	int64		at_least;

	if (PG_NARGS() == 0)
		return 0;
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", "at_least")));
	at_least = PG_GETARG_INT64(0);
	if (at_least < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must not be negative", "at_least")));
	if (at_least > DLOCK_REBASE_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must not be greater than %lld",
						"at_least", (long long) DLOCK_REBASE_MAX),
				 errdetail("Tokens above it would leave too little room before the token counter reaches its maximum, after which every acquisition fails.")));
	return at_least;
}

/*
 * dlock_rebase() and dlock_rebase(at_least): jump now, as after a change
 * of history, and with at_least also above it (the token a dropped copy of
 * the extension reached, say); returns the new floor.  For events dlock
 * cannot see (see the file header).  The jump only ever raises the counter.
 * Superusers and the owner of the extension only.
 */
Datum
dlock_rebase(PG_FUNCTION_ARGS)
{
	const DlockRelations *rels;
	Relation	seqrel;
	int64		floor;
	int64		at_least;
	Oid			extoid = get_extension_oid("dlock", false);

	if (!DlockExtensionOwnercheck(extoid, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to rebase dlock tokens"),
				 errdetail("Only superusers and the owner of extension \"dlock\" may call dlock_rebase().")));
	at_least = TokenAtLeastArg(fcinfo);
	PreventCommandIfReadOnly("dlock_rebase()");

	rels = DlockGetRelations(fcinfo);
	(void) TokenPrepare(rels, NULL);
	if (!OidIsValid(token_state_epoch))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"dlock\" must be updated before tokens can be rebased"),
				 errhint("Run ALTER EXTENSION dlock UPDATE.")));
	seqrel = relation_open(rels->token_seq, AccessShareLock);
	(void) TokenJump(rels, seqrel, at_least, "rebase", &floor, NULL);
	TokenFlushSequence(seqrel);
	relation_close(seqrel, AccessShareLock);
	ForceDurableCommit();
	PG_RETURN_INT64(floor);
}
