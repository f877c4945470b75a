/*-------------------------------------------------------------------------
 *
 * dlock.h
 *		Shared declarations of the dlock extension.
 *
 * The locking protocol (every lock dlock takes, its key, mode, resource
 * owner and order, the lease state machine and the invariants with the
 * tests that check them) is written once, in src/README; comments in the
 * code point to it.
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

/*
 * The counters of a lease row (stats.c), columns found by name: the 1.2
 * update adds them to dlock_lease and dlock_stats_retired.
 */
#define DLOCK_STATS_ACQUISITIONS	0
#define DLOCK_STATS_OWNER_RENEWALS	1
#define DLOCK_STATS_RENEWALS		2
#define DLOCK_STATS_RELEASES		3
#define DLOCK_STATS_TAKEOVERS		4
#define DLOCK_STATS_LOST			5
#define DLOCK_STATS_WAITS			6
#define DLOCK_STATS_NCOUNTS			7	/* the int8 ones */
#define DLOCK_STATS_WAIT_TIME		7
#define DLOCK_STATS_WAIT_TIME_MAX	8
#define DLOCK_STATS_RESET			9
#define DLOCK_STATS_COLS			10

typedef struct DlockLeaseStats
{
	int64		count[DLOCK_STATS_NCOUNTS];
	double		wait_time;		/* seconds, waits that got the lease */
	double		wait_time_max;
	bool		has_reset;
	TimestampTz reset;
} DlockLeaseStats;

/* The relations of the installed extension (relation.c). */
typedef struct DlockRelations
{
	Oid			lease_table;
	Oid			lease_index;
	Oid			token_seq;
	Oid			key_table;		/* dlock_lock_key; InvalidOid before 1.2 */
	bool		has_role_oid;	/* false: a 1.0 table, holders by name */
	bool		has_stats;		/* the counters' columns exist (1.2) */
	AttrNumber	stats_att[DLOCK_STATS_COLS];
	Oid			stats_retired;	/* dlock_stats_retired, if has_stats */
	Oid			stats_base;		/* dlock_stats_base, if has_stats */
	AttrNumber	att_min_hold;	/* 1.2 columns, found by name; 0 if absent */
	AttrNumber	att_lock_delay;
	AttrNumber	att_pin_grace;
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
	DlockLeaseStats stats;		/* zero unless rels->has_stats */
	int64		min_hold;		/* microseconds; 0: none, -1: NULL */
	int64		lock_delay;		/* microseconds; 0: none, -1: NULL */
	int64		pin_grace;		/* microseconds; -1: NULL (never end) */
} DlockLease;

/* GUCs (dlock.c) */
extern int	dlock_max_ttl;
extern int	dlock_max_leases_per_role;
extern bool dlock_events;
extern int	dlock_lock_delay;
extern int	dlock_pin_grace;

/* relation.c */
extern void RelationInit(void);
extern const DlockRelations *DlockGetRelations(FunctionCallInfo fcinfo);
extern Relation DlockOpenLeaseTable(const DlockRelations *rels,
									LOCKMODE mode);
extern Oid	DlockLeaseIndex(Relation rel);

/* locktag.c: every lock key, and the secret names are keyed with */
extern void LockTagInit(void);
extern uint64 NameHash(text *name);
extern void NameLockTag(text *name, LOCKTAG *tag);
extern void NameQueueTag(const LOCKTAG *tag, LOCKTAG *queue_tag);
extern void TokenJumpTag(LOCKTAG *tag, int stripe);
extern void RoleQuotaTag(Oid role, LOCKTAG *tag);
extern PGDLLEXPORT Datum dlock_new_lock_key(PG_FUNCTION_ARGS);

/* args.c */
extern void DlockCheckName(text *name);
extern text *DlockNameArg(FunctionCallInfo fcinfo, int argno);
extern int64 DlockTokenArg(FunctionCallInfo fcinfo, int argno);
extern TimestampTz DlockExpiryArg(FunctionCallInfo fcinfo, int argno,
								  TimestampTz now);
extern int64 DlockDurationArg(FunctionCallInfo fcinfo, int argno,
							  const char *what);
extern char *DlockOwnerArg(FunctionCallInfo fcinfo, int argno);
extern int64 DlockMinHoldArg(FunctionCallInfo fcinfo, int argno,
							 int ttl_argno);
extern int64 DlockLockDelayArg(FunctionCallInfo fcinfo, int argno);

/* lease.c */
extern void LeaseFetch(const DlockRelations *rels, text *name,
					   DlockLease *lease);
extern void LeaseFetchSettled(const DlockRelations *rels, text *name,
							  DlockLease *lease);
extern void LeaseFetchForUpdate(const DlockRelations *rels, text *name,
								DlockLease *lease);
extern Oid	LeaseHolder(const DlockLease *lease);
extern bool LeaseCallerActsForHolder(const DlockLease *lease);
extern bool LeaseRoleActsForHolder(const DlockLease *lease, Oid role);
extern void DlockDenyHolder(const DlockLease *lease, text *name,
							const char *action);
extern bool LeaseIsHeld(const DlockLease *lease, TimestampTz now);
extern bool LeaseIsBusy(const DlockLease *lease, TimestampTz now);
extern TimestampTz LeaseAvailableAt(const DlockLease *lease);
extern bool LeasePinEnd(const DlockLease *lease, TimestampTz *pin_end);
extern void LeaseWriteNew(const DlockRelations *rels, text *name,
						  DlockLease *lease, int64 token, const char *owner,
						  TimestampTz now, TimestampTz expires_at,
						  int64 min_hold, int64 lock_delay);
extern void LeaseSetExpiry(const DlockRelations *rels, text *name,
						   DlockLease *lease, TimestampTz expires_at,
						   int64 lock_delay);
extern void LeaseSetReleased(const DlockRelations *rels, text *name,
							 DlockLease *lease, TimestampTz now);
extern void LeaseSetRevoked(const DlockRelations *rels, text *name,
							DlockLease *lease, TimestampTz now);
extern List *LeaseListIdle(const DlockRelations *rels, TimestampTz now,
						   TimestampTz cutoff, int limit);
extern void LeaseDelete(const DlockRelations *rels, DlockLease *lease);
extern List *LeaseListAll(const DlockRelations *rels);
extern int	LeaseCountHeldByRole(const DlockRelations *rels, Oid role,
								 TimestampTz now, int limit);

/* token.c */
extern void TokenInit(void);
extern void ForceDurableCommit(void);
extern PGDLLEXPORT Datum dlock_rebase(PG_FUNCTION_ARGS);

/* The limits of one waiting acquire (wait.c). */
typedef struct DlockWait
{
	TimestampTz start;			/* the caller's lock_timeout counts from here */
	TimestampTz deadline;		/* start + the acquire's wait */
	bool		queued;			/* it joined the queue: counted as a wait */
} DlockWait;

/* relation.c and locktag.c, for an acquire's first look within its deadline */
extern const DlockRelations *DlockGetRelationsWait(FunctionCallInfo fcinfo,
												   const DlockWait *w);
extern bool LockKeyLoad(Oid key_table, const DlockWait *w);

/* lease.c, waiting within an acquire's deadline */
extern bool LeaseFetchLocked(const DlockRelations *rels, text *name,
							 DlockLease *lease, const DlockWait *w);
extern bool LeaseFetchForUpdateWithin(const DlockRelations *rels, text *name,
									  DlockLease *lease, const DlockWait *w);

/* token.c, waiting within an acquire's deadline */
extern int64 TokenDraw(const DlockRelations *rels, int64 last,
					   const DlockWait *w);

/* acquire.c */
extern int64 LeaseAcquire(FunctionCallInfo fcinfo, text *name,
						  int64 wait_usecs, const char *owner);

/* wait.c */
extern void WaitInit(void);
extern bool NameHasWaiters(const LOCKTAG *queue_tag);
extern void XactLockRelation(Oid relid, LOCKMODE mode);
extern bool NameLockTry(const LOCKTAG *tag, LOCKMODE mode);
extern void NameLockWait(const LOCKTAG *tag, LOCKMODE mode);
extern void NameLockGiveBack(const LOCKTAG *tag, LOCKMODE mode);
extern bool WaitQueueJoin(const LOCKTAG *queue_tag, const DlockWait *w);
extern void WaitQueueLeave(const LOCKTAG *queue_tag);
extern bool WaitForNameLock(const LOCKTAG *tag, LOCKMODE mode,
							const DlockWait *w);
extern bool WaitForNameHolders(const LOCKTAG *tag, LOCKMODE mode,
							   const DlockWait *w);
extern bool WaitForNameHoldersNoting(const LOCKTAG *tag, LOCKMODE mode,
									 const DlockWait *w, List **pids);
extern bool WaitForNameFree(const LOCKTAG *tag, LOCKMODE mode,
							const DlockWait *w, List **pids);
extern void WaitForLeaseChange(const DlockWait *w, TimestampTz until);
extern bool WaitForXact(TransactionId xid, const DlockWait *w);
extern bool WaitForRelationLock(Oid relid, const DlockWait *w);
extern void RelationLockGiveBack(Oid relid);
extern bool WaitForRelationLockMode(Oid relid, LOCKMODE mode,
									const DlockWait *w);
extern void RelationLockGiveBackMode(Oid relid, LOCKMODE mode);
extern bool WaitForIndexLocks(Relation rel, const DlockWait *w);
extern void WaitCheckClient(void);
extern void WaitCheckClientAtCommit(void);
extern void WaitWakeQueueAtCommit(const LOCKTAG *tag);

/* fence.c */
extern PGDLLEXPORT Datum dlock_fence(PG_FUNCTION_ARGS);
extern bool FenceCheck(const DlockRelations *rels, text *name, int64 token,
					   Oid role, bool raise);
extern bool FenceRemaining(const DlockRelations *rels, text *name,
						   int64 token, Interval *remaining);

/* stats.c: the counters of dlock_stats */
extern int	dlock_stats_max_names;
extern void StatsInit(void);
extern void StatsFindColumns(DlockRelations *rels, Oid nspid);
extern void StatsFromValues(const AttrNumber *att, const Datum *values,
							const bool *nulls, DlockLeaseStats *s);
extern void StatsToValues(const AttrNumber *att, const DlockLeaseStats *s,
						  Datum *values, bool *nulls);
extern void StatsNoteWait(DlockLeaseStats *s, int64 waited);
extern void StatsAdd(DlockLeaseStats *to, const DlockLeaseStats *from);
extern void StatsRetire(const DlockRelations *rels, const DlockLeaseStats *add,
						TimestampTz reset);
extern void StatsCountBusy(text *name);
extern void StatsCountWaitTimeout(text *name, int64 waited);
extern void StatsCountFenceRefusal(text *name);
extern void StatsForgetName(text *name);
extern void StatsBaseForget(const DlockRelations *rels, List *names,
							List *rows, DlockLeaseStats *retired);
extern void StatsWaitBegin(const DlockWait *w);
extern void StatsWaitEnd(void);
extern bool StatsWaitOf(int pid, TimestampTz *start, TimestampTz *deadline);
extern PGDLLEXPORT Datum dlock_stats_shared(PG_FUNCTION_ARGS);
extern PGDLLEXPORT Datum dlock_stats_reset(PG_FUNCTION_ARGS);

/* waiters.c */
extern PGDLLEXPORT Datum dlock_waiters_locks(PG_FUNCTION_ARGS);

/* events.c: NOTIFY dlock at commit, if dlock.events is on */
typedef enum DlockEvent
{
	DLOCK_EVENT_ACQUIRED,		/* a free name (no row, or released) */
	DLOCK_EVENT_TAKEN_OVER,		/* an expired, unreleased lease */
	DLOCK_EVENT_RELEASED,		/* a true dlock_release */
	DLOCK_EVENT_REVOKED			/* dlock_revoke ended it */
} DlockEvent;

extern void DlockEventsDeferStandbyWait(void);
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
 * (fence.c; kept by xactstate.c).
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
	CommandId	cid;			/* the UPDATE's command (FenceMoveCommand) */
	Oid			user;			/* ... and its current user */
	Oid			relid;			/* the source partition */
	ItemPointerData tid;		/* the old row version */
	int64		old_writer;		/* checked against the old row's lock */
	Oid			old_role;		/* ... as this role */
	int64		new_token;		/* the token the new row carries */
	int64		new_writer;		/* checked against the new row's lock */
	Oid			new_role;		/* ... as this role */
	int			old_len;
	int			new_len;
	char		old_lock[DLOCK_MAX_NAME_BYTES];
	char		new_lock[DLOCK_MAX_NAME_BYTES];
} FenceMove;

/* xactstate.c */
extern void DlockXactGuard(void);
extern void DeclareToken(text *name, int64 token);
extern bool DeclaredTokenFor(text *name, int64 *token, Oid *role);
extern bool DlockNamesEqual(text *a, text *b);
extern FenceMove *FencePendingMove(void);
extern bool CheckLockHeld(const LOCKTAG *tag);
extern void CheckLockRemember(const LOCKTAG *tag);

/* revoke.c */
extern PGDLLEXPORT Datum dlock_revoke(PG_FUNCTION_ARGS);
extern List *NamePinningPids(const LOCKTAG *tag);
extern List *NameCheckHolderPids(const LOCKTAG *tag);
typedef struct RevokeTarget RevokeTarget;
extern List *EndPinningBackends(const LOCKTAG *tag, text *name,
								RevokeTarget *revoke, TimestampTz deadline);

/* undelivered.c */
extern void UndeliveredNoteAcquire(FunctionCallInfo fcinfo, text *name,
								   int64 token);

#endif							/* DLOCK_H */
