/*-------------------------------------------------------------------------
 *
 * compat.h
 *		Every difference between the supported PostgreSQL major versions
 *		(14 to 18) that dlock has to care about, in one place.
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

/* The counter's relfilenode: rd_node before PostgreSQL 16, rd_locator after. */
#if PG_VERSION_NUM >= 160000
#define DlockRelFileNumber(rel) ((Oid) (rel)->rd_locator.relNumber)
#else
#define DlockRelFileNumber(rel) ((rel)->rd_node.relNode)
#endif

/* Is the role the extension's owner (or a superuser)? */
#if PG_VERSION_NUM >= 160000
#include "catalog/pg_extension.h"
#include "utils/acl.h"
#define DlockExtensionOwnercheck(extoid, roleid) \
	object_ownercheck(ExtensionRelationId, (extoid), (roleid))
#else
#include "utils/acl.h"
#define DlockExtensionOwnercheck(extoid, roleid) \
	pg_extension_ownercheck((extoid), (roleid))
#endif

/* EmitWarningsOnPlaceholders() was renamed in PostgreSQL 15. */
#if PG_VERSION_NUM < 150000
#define MarkGUCPrefixReserved(prefix) EmitWarningsOnPlaceholders(prefix)
#endif

#endif							/* DLOCK_COMPAT_H */
