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
#include "utils/timestamp.h"

#if PG_VERSION_NUM < 140000
#error "dlock requires PostgreSQL 14 or later"
#endif

/*
 * simple_heap_update() reports whether index entries are needed through an
 * extra argument from PostgreSQL 16 on; before that, a heap-only (HOT) new
 * tuple means no new index entry is needed.
 */
#if PG_VERSION_NUM >= 160000
#define DlockHeapUpdate(rel, otid, tup, need_index) \
	do { \
		TU_UpdateIndexes dlock_upd_; \
		simple_heap_update((rel), (otid), (tup), &dlock_upd_); \
		*(need_index) = (dlock_upd_ != TU_None); \
	} while (0)
#else
#define DlockHeapUpdate(rel, otid, tup, need_index) \
	do { \
		simple_heap_update((rel), (otid), (tup)); \
		*(need_index) = !HeapTupleIsHeapOnly(tup); \
	} while (0)
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

#endif							/* DLOCK_COMPAT_H */
