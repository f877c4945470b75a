/*-------------------------------------------------------------------------
 *
 * compat.h
 *		Every difference between the supported PostgreSQL major versions
 *		(14 to 17) that dlock has to care about, in one place.
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLOCK_COMPAT_H
#define DLOCK_COMPAT_H

#include "access/heapam.h"
#include "access/xlog.h"
#include "utils/guc.h"
#include "utils/relcache.h"
#include "utils/timestamp.h"

#if PG_VERSION_NUM < 140000
#error "dlock requires PostgreSQL 14 or later"
#endif

/* Infinite intervals exist from PostgreSQL 17 on. */
#if PG_VERSION_NUM >= 170000
#define DlockIntervalIsInfinite(i) INTERVAL_NOT_FINITE(i)
#else
#define DlockIntervalIsInfinite(i) false
#endif

/* The timeline new WAL is written on; ThisTimeLineID before PostgreSQL 15. */
#if PG_VERSION_NUM >= 150000
#define DlockCurrentTimeLine() GetWALInsertionTimeLine()
#else
#define DlockCurrentTimeLine() ThisTimeLineID
#endif

/* EmitWarningsOnPlaceholders() was renamed in PostgreSQL 15. */
#if PG_VERSION_NUM < 150000
#define MarkGUCPrefixReserved(prefix) EmitWarningsOnPlaceholders(prefix)
#endif

/* RelationGetPrimaryKeyIndex() takes deferrable_ok from PostgreSQL 18 on. */
#if PG_VERSION_NUM >= 180000
#define DlockRelationGetPrimaryKeyIndex(rel) RelationGetPrimaryKeyIndex(rel, false)
#else
#define DlockRelationGetPrimaryKeyIndex(rel) RelationGetPrimaryKeyIndex(rel)
#endif

#endif							/* DLOCK_COMPAT_H */
