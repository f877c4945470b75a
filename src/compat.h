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
 * The varlena macros (VARDATA_ANY, VARSIZE_ANY_EXHDR, ...) live in varatt.h
 * from PostgreSQL 16 on; before, postgres.h declares them.
 */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
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
