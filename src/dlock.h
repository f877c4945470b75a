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
 * Every change to a lease row happens while the changing transaction holds
 * a transaction-level advisory lock on the name's key, in the two-int4 form
 * (DLOCK_ADVISORY_CLASS, hash of the name).  Three lock modes are used on
 * that one key:
 *
 *	DLOCK_LOCK_CHECK  (RowShareLock) is taken by dlock_check, dlock_assert and
 *		dlock_fence when they vouch for a token, and kept until the checking
 *		transaction ends.  It conflicts only with DLOCK_LOCK_HANDOVER.
 *	DLOCK_LOCK_STATE  (ShareUpdateExclusiveLock) is taken by every change of
 *		the row (acquire, release, renew).  It conflicts with itself and with
 *		DLOCK_LOCK_HANDOVER, not with DLOCK_LOCK_CHECK, so a holder can
 *		release or renew while somebody else's check is open.
 *	DLOCK_LOCK_HANDOVER  (ExclusiveLock) is taken in addition, after
 *		DLOCK_LOCK_STATE, by an acquire that hands the lease to a new holder.
 *		It conflicts with all three.
 *
 * A waiting acquire also holds DLOCK_LOCK_WAITING (ShareLock) on a second
 * key, (DLOCK_WAITER_CLASS, hash of the name), while it waits, and nothing
 * else.  A new acquire that is willing to wait first probes that key with
 * ExclusiveLock: if anybody is waiting, it queues up too rather than taking
 * a lease that was just freed, so a holder that releases and acquires again
 * at once cannot starve the waiters.
 *
 * dlock_cleanup deletes rows of leases that are not held; it takes only
 * DLOCK_LOCK_HANDOVER, which conflicts with all the other modes.
 *
 * A lock that changed the row is kept until the transaction ends, so nobody
 * decides on a state that is not yet committed.  A lock whose holder found
 * nothing to change is given back at once.  dlock_acquire only tries the
 * name's locks without waiting, and holds none of them while it sleeps (only
 * its waiter lock, which blocks nothing but a newcomer's brief probe), so it
 * cannot block a holder's release and cannot take part in a deadlock.
 *
 * Tokens come from @extschema@.dlock_token_seq (CACHE 1, NO CYCLE), drawn
 * only while both locks of a hand-over are held; token.c says how they stay
 * above every earlier token through crashes, failover and PITR.
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLOCK_H
#define DLOCK_H

#include "postgres.h"

#include "fmgr.h"
#include "nodes/pg_list.h"
#include "storage/itemptr.h"
#include "storage/lock.h"
#include "utils/timestamp.h"

/* First key of every dlock advisory lock: "DLK" in ASCII, 0x00444c4b. */
#define DLOCK_ADVISORY_CLASS	4475979

/* First key of the waiters' advisory locks: the next number. */
#define DLOCK_WAITER_CLASS		4475980

/* First key of the lock that serializes moving tokens to a new epoch. */
#define DLOCK_TOKEN_CLASS		4475981

#define DLOCK_LOCK_CHECK		RowShareLock
#define DLOCK_LOCK_STATE		ShareUpdateExclusiveLock
#define DLOCK_LOCK_HANDOVER		ExclusiveLock
#define DLOCK_LOCK_WAITING		ShareLock
#define DLOCK_LOCK_WAITERS_PROBE	ExclusiveLock

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
#define Natts_dlock_lease				7

/* The relations of the installed extension (dlock.c). */
typedef struct DlockRelations
{
	Oid			lease_table;
	Oid			lease_index;
	Oid			token_seq;
} DlockRelations;

/* One lease row, as last committed (lease.c). */
typedef struct DlockLease
{
	bool		found;			/* false: the name was never acquired */
	ItemPointerData tid;
	int64		token;
	char	   *owner;			/* palloc'd, NULL when anonymous */
	NameData	role;			/* the role that acquired it, by name */
	TimestampTz acquired_at;
	TimestampTz expires_at;
	bool		released;
	TimestampTz released_at;
} DlockLease;

/* GUCs (dlock.c) */
extern int	dlock_max_ttl;
extern int	dlock_max_leases_per_role;

/* dlock.c */
extern const DlockRelations *DlockGetRelations(FunctionCallInfo fcinfo);
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
extern int	LeaseCountHeldByRole(const DlockRelations *rels, const char *role,
								 TimestampTz now, int limit);

/* token.c */
extern void TokenInit(void);
extern int64 TokenDraw(const DlockRelations *rels);

/* wait.c */
extern void NameLockTag(text *name, LOCKTAG *tag);
extern void NameWaiterTag(const LOCKTAG *tag, LOCKTAG *waiter_tag);
extern bool NameHasWaiters(const LOCKTAG *waiter_tag);
extern bool NameLockTry(const LOCKTAG *tag, LOCKMODE mode);
extern void NameLockWait(const LOCKTAG *tag, LOCKMODE mode);
extern void NameLockGiveBack(const LOCKTAG *tag, LOCKMODE mode);
extern void WaitForLeaseChange(TimestampTz now, TimestampTz deadline,
							   const DlockLease *lease, TimestampTz wait_start);

/* fence.c */
extern PGDLLEXPORT Datum dlock_fence(PG_FUNCTION_ARGS);
extern bool FenceCheck(const DlockRelations *rels, text *name, int64 token,
					   bool raise);

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

#endif							/* DLOCK_H */
