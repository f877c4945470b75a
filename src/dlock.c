/*-------------------------------------------------------------------------
 *
 * dlock.c
 *		Module set-up: the GUCs and the callbacks the library registers when
 *		it is loaded.  Finding the extension's relations is in relation.c,
 *		argument checks and timestamp arithmetic in args.c.
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "compat.h"
#include "dlock.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

int			dlock_max_ttl = 86400;
int			dlock_max_leases_per_role = 0;
bool		dlock_events = false;
int			dlock_lock_delay = 0;
int			dlock_pin_grace = 30000;

void
_PG_init(void)
{
	DefineCustomIntVariable("dlock.max_ttl",
							"Largest ttl a lease may be acquired or renewed for.",
							"A longer ttl is rejected with SQLSTATE 22023.",
							&dlock_max_ttl,
							86400,
							1,
							INT_MAX,
							PGC_SUSET,
							GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomIntVariable("dlock.max_leases_per_role",
							"Largest number of leases one role may hold at once.",
							"Zero means no limit.  Checked at each new acquisition "
							"with a scan of the lease table.",
							&dlock_max_leases_per_role,
							0,
							0,
							INT_MAX,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("dlock.events",
							 "Sends NOTIFY dlock when a lease changes hands or is released.",
							 "The payload is JSON: lock, event (acquired, taken_over "
							 "or released), token and owner.  Notifying commits are "
							 "serialized cluster-wide, so it is off by default.",
							 &dlock_events,
							 false,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
	StatsInit();
	DefineCustomIntVariable("dlock.lock_delay",
							"Lock-delay of a lease acquired or renewed without one.",
							"After a lease expires without a release, its name "
							"cannot be taken for this long.  At most dlock.max_ttl.",
							&dlock_lock_delay,
							0,
							0,
							INT_MAX,
							PGC_SUSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("dlock.pin_grace",
							"How long past a lease's expiry or release a transaction holding its check protection may delay a hand-over.",
							"Read in the holder's session at acquire and renew and stored "
							"with the lease; then a waiting acquire ends that transaction.  "
							"-1: never.",
							&dlock_pin_grace,
							30000,
							-1,
							INT_MAX,
							PGC_SUSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
	LockTagInit();
	MarkGUCPrefixReserved("dlock");

	RelationInit();
	TokenInit();
	WaitInit();
}
