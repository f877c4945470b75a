/*-------------------------------------------------------------------------
 *
 * dlock.h
 *		Shared declarations of the dlock extension.
 *
 * Locking protocol
 * ----------------
 * A lease is one row of @extschema@.dlock_lease, keyed by its name.  The row
 * is the source of truth; it is only ever read with the latest committed
 * state (SnapshotSelf), never with the caller's snapshot, and only ever
 * changed by the C functions of this extension.
 *
 * Key space.  Every lock dlock takes on a name is an advisory locktag that
 * no SQL function can reach: the SQL advisory lock functions only build
 * tags whose field 4 is 1 (one int8 key) or 2 (two int4 keys), and Citus
 * uses 4 to 15.  dlock's tags are
 *
 *	field1 = database OID, field2/field3 = high/low 32 bits of a 64-bit hash
 *	of the name (hash_any_extended, seed 0), field4 = one of
 *		DLOCK_LOCKTAG_NAME    (17484)  the name's lock
 *		DLOCK_LOCKTAG_WAITERS (17485)  the name's waiters
 *	and field2 = field3 = 0 with field4 = DLOCK_LOCKTAG_EPOCH (17486) for
 *	the lock that serializes moving tokens to a new epoch, and field2 = the
 *	role's OID, field3 = 0, field4 = DLOCK_LOCKTAG_QUOTA (17487) for the
 *	per-role lease quota.
 *
 * In pg_locks they show as locktype 'advisory' with objsubid 17484 to
 * 17487.  Changing these values is an incompatible change: all backends of
 * a database must use the same ones (restart after installing a new
 * library).
 *
 * Locks are taken in this order, and each is kept as stated:
 *
 * 1. The name's queue key, DLOCK_LOCK_QUEUE (ExclusiveLock), by an acquire
 *	  with wait > 0, for as long as it waits and no longer: the lock
 *	  manager queues such acquires first come, first served.  Its holder,
 *	  the head, is the only waiter that looks at the lease; the others sleep
 *	  in the lock manager.  The head gives it back as soon as it has the
 *	  lease or gives up, and the lock manager grants it to the next in line.
 *	  An acquire with wait = 0 that finds the lease free probes it (taken
 *	  without waiting and given back at once) and says busy if anybody
 *	  queues, so it never takes a lease past the queue; an owner renewal
 *	  never looks at it.
 *
 * 2. The name's key, in one of three modes:
 *	DLOCK_LOCK_CHECK  (RowShareLock) is taken by dlock_check, dlock_assert and
 *		dlock_fence when they vouch for a token to its holder role, and kept
 *		until the checking transaction ends.  It conflicts only with
 *		DLOCK_LOCK_HANDOVER.
 *	DLOCK_LOCK_STATE  (ShareUpdateExclusiveLock) is taken by every change of
 *		the row (acquire, release, renew).  It conflicts with itself and with
 *		DLOCK_LOCK_HANDOVER, not with DLOCK_LOCK_CHECK, so a holder can
 *		release or renew while somebody else's check is open.
 *	DLOCK_LOCK_HANDOVER  (ExclusiveLock) is taken in addition, after
 *		DLOCK_LOCK_STATE, by an acquire that hands the lease to a new holder,
 *		and alone by dlock_cleanup before it deletes a row.  It conflicts
 *		with all three.
 *	A lock that changed the row is kept until the transaction ends, so nobody
 *	decides on a state that is not yet committed.  A lock whose holder found
 *	nothing to change is given back at once.
 *
 * 3. The role's quota key (ExclusiveLock), only when
 *	  dlock.max_leases_per_role is set, by an acquire that hands out a new
 *	  lease, kept until the transaction ends: concurrent acquires by one role
 *	  count its leases one after the other, each with the other's committed
 *	  row.
 *
 * 4. The epoch key (ExclusiveLock), only by the first draws of a token on a
 *	  new timeline (token.c), given back as soon as the counter is moved, so
 *	  it never closes a deadlock with later calls of the transaction.
 *
 * 5. The table @extschema@.dlock_lease: a read that only looks (the busy
 *	  path, a check, each look of a waiting head) takes AccessShareLock and
 *	  gives it back at once; a read whose row may be written takes
 *	  RowExclusiveLock, after the name's lock, and keeps it until the
 *	  transaction ends, so the row's TID stays valid (VACUUM FULL, CLUSTER
 *	  and TRUNCATE wait for that transaction).
 *
 * Waiting (acquire.c decides, wait.c waits).  While an acquire waits it
 * holds its queue lock (or waits for it) and nothing else of dlock's, in
 * particular no lock on the lease table, so maintenance of the table never
 * waits for a waiter.  The head sleeps in one of two places:
 *	- on its latch, while a committed lease holds the name, until that
 *	  lease's expiry or its own deadline.  A transaction that freed the
 *	  lease (dlock_release) sets the latch of the queue lock's holders from
 *	  its commit callback, once its commit is visible; the head resets its
 *	  latch before each look at the row, so a wake-up between the look and
 *	  the sleep is never lost.  Renewals wake nobody.
 *	- in the lock manager, for the name's DLOCK_LOCK_STATE (or
 *	  DLOCK_LOCK_HANDOVER, behind an open check) when the row looks free but
 *	  a transaction that changes it is still open.  The deadlock detector
 *	  sees these waits, so leases acquired in open transactions that wait for
 *	  each other end in 40P01 for one of them; a cycle through committed
 *	  leases is no lock, and ends at the waiters' deadlines.
 * Each lock-manager wait runs in an internal subtransaction with
 * lock_timeout set to the time left: the deadline's 55P03 is caught there
 * and becomes NULL; the caller's own lock_timeout, statement_timeout, query
 * cancel and deadlocks raise their usual errors, and an error gives back
 * every lock the wait took.  The wait = 0 path never starts a
 * subtransaction.
 *
 * Tokens come from @extschema@.dlock_token_seq (CACHE 1, NO CYCLE), drawn
 * only while both locks of a hand-over are held; token.c says how they stay
 * above every earlier token, whatever happens to the database.  A draw that
 * must jump takes one more lock, DLOCK_LOCKTAG_EPOCH in ExclusiveLock,
 * last, and gives it back before it returns.  While holding it, a draw
 * waits for nothing but the table locks of dlock's own relations, so only
 * a transaction that holds DDL locks on them and then acquires could
 * deadlock with it.
 *
 * Holders.  From 1.1 on, a lease row records its holder role as an OID
 * (role_oid) together with the system identifier of the cluster where that
 * OID was recorded (role_sysid) and the role's name (role).  In the
 * recording cluster the OID decides (a rename keeps the leases, a role
 * created later under the old name gets none); anywhere else (a restore of a
 * dump, pg_upgrade) the name decides, and the next write of the row records
 * the OID there.  A 1.0 table (no role_oid) is read and written by name.
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLOCK_H
#define DLOCK_H

#include "postgres.h"

#include "fmgr.h"
#include "nodes/pg_list.h"
#include "storage/buf.h"
#include "storage/itemptr.h"
#include "storage/lock.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

/*
 * Field 4 of dlock's advisory locktags: "DL" in ASCII (0x444c) and the next
 * numbers.  Neither 1 nor 2 (the SQL advisory lock functions) nor 4 to 15
 * (Citus).
 */
#define DLOCK_LOCKTAG_NAME		17484
#define DLOCK_LOCKTAG_WAITERS	17485
#define DLOCK_LOCKTAG_EPOCH		17486
#define DLOCK_LOCKTAG_QUOTA		17487

#define DLOCK_LOCK_CHECK		RowShareLock
#define DLOCK_LOCK_STATE		ShareUpdateExclusiveLock
#define DLOCK_LOCK_HANDOVER		ExclusiveLock
#define DLOCK_LOCK_QUEUE		ExclusiveLock

#define DLOCK_MAX_NAME_BYTES	255
#define DLOCK_MAX_OWNER_BYTES	255

/* SQLSTATE LK001: stale fencing token */
#define ERRCODE_DLOCK_STALE_TOKEN	MAKE_SQLSTATE('L','K','0','0','1')

/* Columns of @extschema@.dlock_lease, in order. */
#define Anum_dlock_lease_name			1
#define Anum_dlock_lease_token			2
#define Anum_dlock_lease_owner			3
#define Anum_dlock_lease_role			4
#define Anum_dlock_lease_acquired_at	5
#define Anum_dlock_lease_expires_at		6
#define Anum_dlock_lease_released_at	7
#define Natts_dlock_lease_1_0			7
#define Anum_dlock_lease_role_oid		8	/* 1.1 */
#define Anum_dlock_lease_role_sysid		9	/* 1.1 */
#define Natts_dlock_lease				9

/* The relations of the installed extension (relation.c). */
typedef struct DlockRelations
{
	Oid			lease_table;
	Oid			lease_index;
	Oid			token_seq;
	bool		has_role_oid;	/* false: a 1.0 table, holders by name */
} DlockRelations;

/* One lease row, as last committed (lease.c). */
typedef struct DlockLease
{
	bool		found;			/* false: the name was never acquired */
	ItemPointerData tid;
	int64		token;
	char	   *owner;			/* palloc'd, NULL when anonymous */
	NameData	role;			/* the holder role's name, as recorded */
	Oid			role_oid;		/* the holder role, if role_sysid is ours */
	int64		role_sysid;		/* cluster where role_oid was recorded; 0:
								 * unknown (a 1.0 row) */
	bool		for_update;		/* fetched under the table lock for writes */
	bool		mine;			/* this transaction wrote the row version */
	TransactionId deleter;		/* another transaction deleting it, if any */
	TimestampTz acquired_at;
	TimestampTz expires_at;
	bool		released;
	TimestampTz released_at;
} DlockLease;

/* GUCs (dlock.c) */
extern int	dlock_max_ttl;
extern int	dlock_max_leases_per_role;
extern bool dlock_events;

/* relation.c */
extern void RelationInit(void);
extern const DlockRelations *DlockGetRelations(FunctionCallInfo fcinfo);
extern Relation DlockOpenLeaseTable(const DlockRelations *rels,
									LOCKMODE mode);
extern Oid	DlockLeaseIndex(Relation rel);

/* args.c */
extern void DlockCheckName(text *name);
extern text *DlockNameArg(FunctionCallInfo fcinfo, int argno);
extern int64 DlockTokenArg(FunctionCallInfo fcinfo, int argno);
extern TimestampTz DlockExpiryArg(FunctionCallInfo fcinfo, int argno,
								  TimestampTz now);
extern int64 DlockDurationArg(FunctionCallInfo fcinfo, int argno,
							  const char *what);
extern char *DlockOwnerArg(FunctionCallInfo fcinfo, int argno);

/* lease.c */
extern void LeaseFetch(const DlockRelations *rels, text *name,
					   DlockLease *lease);
extern void LeaseFetchForUpdate(const DlockRelations *rels, text *name,
								DlockLease *lease);
extern Oid	LeaseHolder(const DlockLease *lease);
extern bool LeaseCallerActsForHolder(const DlockLease *lease);
extern void DlockDenyHolder(const DlockLease *lease, text *name,
							const char *action);
extern bool LeaseIsHeld(const DlockLease *lease, TimestampTz now);
extern void LeaseWriteNew(const DlockRelations *rels, text *name,
						  DlockLease *lease, int64 token, const char *owner,
						  TimestampTz now, TimestampTz expires_at);
extern void LeaseSetExpiry(const DlockRelations *rels, text *name,
						   DlockLease *lease, TimestampTz expires_at);
extern void LeaseSetReleased(const DlockRelations *rels, text *name,
							 DlockLease *lease, TimestampTz now);
extern List *LeaseListIdle(const DlockRelations *rels, TimestampTz now,
						   TimestampTz cutoff, int limit);
extern void LeaseDelete(const DlockRelations *rels, DlockLease *lease);
extern int	LeaseCountHeldByRole(const DlockRelations *rels, Oid role,
								 TimestampTz now, int limit);

/* token.c */
extern void TokenInit(void);
extern int64 TokenDraw(const DlockRelations *rels, int64 last);
extern void ForceDurableCommit(void);
extern PGDLLEXPORT Datum dlock_rebase(PG_FUNCTION_ARGS);

/* The limits of one waiting acquire (wait.c). */
typedef struct DlockWait
{
	TimestampTz start;			/* the caller's lock_timeout counts from here */
	TimestampTz deadline;		/* start + the acquire's wait */
} DlockWait;

/* lease.c, waiting within an acquire's deadline */
extern bool LeaseFetchForUpdateWithin(const DlockRelations *rels, text *name,
									  DlockLease *lease, const DlockWait *w);

/* acquire.c */
extern int64 LeaseAcquire(FunctionCallInfo fcinfo, text *name,
						  int64 wait_usecs, const char *owner);

/* wait.c */
extern void WaitInit(void);
extern uint64 NameHash(text *name);
extern void NameLockTag(text *name, LOCKTAG *tag);
extern void NameQueueTag(const LOCKTAG *tag, LOCKTAG *queue_tag);
extern bool NameHasWaiters(const LOCKTAG *queue_tag);
extern bool NameLockTry(const LOCKTAG *tag, LOCKMODE mode);
extern void NameLockWait(const LOCKTAG *tag, LOCKMODE mode);
extern void NameLockGiveBack(const LOCKTAG *tag, LOCKMODE mode);
extern bool WaitQueueJoin(const LOCKTAG *queue_tag, const DlockWait *w);
extern void WaitQueueLeave(const LOCKTAG *queue_tag);
extern bool WaitForNameLock(const LOCKTAG *tag, LOCKMODE mode,
							const DlockWait *w);
extern void WaitForLeaseChange(const DlockWait *w, TimestampTz until);
extern bool WaitForXact(TransactionId xid, const DlockWait *w);
extern bool WaitForRelationLock(Oid relid, const DlockWait *w);
extern void RelationLockGiveBack(Oid relid);
extern void WaitCheckClient(void);
extern void WaitCheckClientAtCommit(void);
extern void WaitWakeQueueAtCommit(const LOCKTAG *tag);

/* fence.c */
extern PGDLLEXPORT Datum dlock_fence(PG_FUNCTION_ARGS);
extern bool FenceCheck(const DlockRelations *rels, text *name, int64 token,
					   bool raise);
extern bool FenceRemaining(const DlockRelations *rels, text *name,
						   int64 token, Interval *remaining);

/* events.c: NOTIFY dlock at commit, if dlock.events is on */
typedef enum DlockEvent
{
	DLOCK_EVENT_ACQUIRED,		/* a free name (no row, or released) */
	DLOCK_EVENT_TAKEN_OVER,		/* an expired, unreleased lease */
	DLOCK_EVENT_RELEASED		/* a true dlock_release */
} DlockEvent;

extern void DlockEventSend(text *name, DlockEvent event, int64 token,
						   const char *owner);

/*
 * The one line lease.c calls for each event: with dlock.events off (the
 * default) it costs one boolean test.
 */
static inline void
DlockEventLease(text *name, DlockEvent event, int64 token, const char *owner)
{
	if (dlock_events)
		DlockEventSend(name, event, token, owner);
}

/*
 * A row that the dlock_fence() trigger let through a BEFORE UPDATE on a
 * partition, in case the UPDATE moves it to another partition: PostgreSQL
 * then fires BEFORE DELETE on the same row, and BEFORE INSERT on the
 * target partition, and those must pass for the writer the UPDATE checked
 * (fence.c; kept by declare.c).
 */
typedef enum FenceMoveStage
{
	FENCE_MOVE_NONE,			/* nothing pending */
	FENCE_MOVE_DELETE,			/* UPDATE passed; its DELETE may follow */
	FENCE_MOVE_INSERT			/* DELETE passed; its INSERT may follow */
} FenceMoveStage;

typedef struct FenceMove
{
	FenceMoveStage stage;
	Oid			relid;			/* the source partition */
	ItemPointerData tid;		/* the old row version */
	int64		old_writer;		/* checked against the old row's lock */
	int64		new_token;		/* the token the new row carries */
	int64		new_writer;		/* checked against the new row's lock */
	int			old_len;
	int			new_len;
	char		old_lock[DLOCK_MAX_NAME_BYTES];
	char		new_lock[DLOCK_MAX_NAME_BYTES];
} FenceMove;

/* declare.c */
extern void DlockXactGuard(void);
extern void DeclareToken(text *name, int64 token);
extern bool DeclaredTokenFor(text *name, int64 *token);
extern bool DlockNamesEqual(text *a, text *b);
extern FenceMove *FencePendingMove(void);
extern bool CheckLockHeld(const LOCKTAG *tag);
extern void CheckLockRemember(const LOCKTAG *tag);

#endif							/* DLOCK_H */
