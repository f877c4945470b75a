/*-------------------------------------------------------------------------
 *
 * compat.h
 *		Every difference between the supported PostgreSQL major versions
 *		(14 to 18) that dlock has to care about, in one place.  No other
 *		file tests PG_VERSION_NUM.
 *
 *		How each branch was checked: 14.13, 15 (Debian's) and 18.3 are
 *		built with -Wall -Wextra -Werror and run through the test suites
 *		("make check" and "make check-versions"), which covers both sides
 *		of the 15 branches (GetWALInsertionTimeLine, MarkGUCPrefixReserved).
 *		16 and 17 cannot be built here.  The branches that switch at 16 or
 *		17 were reviewed against PostgreSQL's source (a recent master
 *		snapshot of postgres/postgres; the REL_16/REL_17 branches themselves
 *		were not available) and the release notes:
 *		- varatt.h: split off from postgres.h in 16, so from 16 on the
 *		  varlena macros must be included from it (some other headers pull
 *		  it in, which is why only wait.c broke, and only on 18).
 *		- INTERVAL_NOT_FINITE: infinite intervals arrive in 17.
 *		- rd_locator and object_ownercheck() replace rd_node and
 *		  pg_extension_ownercheck() in 16 (token.c; 18 builds with them).
		- LockInstanceData's vxid (procNumber) replaces its backend and
		  lxid fields in 17, with the rest of the BackendId to ProcNumber
		  change (DlockVxidGetProc); 14 and 18 build either side.
 *
 * Copyright (c) 2026, the dlock developers
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

/* A relation's file, for ReadRecentBuffer: rd_node before 16, rd_locator after. */
#if PG_VERSION_NUM >= 160000
#define DlockRelFileLocator(rel) ((rel)->rd_locator)
#else
#define DlockRelFileLocator(rel) ((rel)->rd_node)
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

/* RelationGetPrimaryKeyIndex() takes deferrable_ok from PostgreSQL 18 on. */
#if PG_VERSION_NUM >= 180000
#define DlockRelationGetPrimaryKeyIndex(rel) RelationGetPrimaryKeyIndex(rel, false)
#else
#define DlockRelationGetPrimaryKeyIndex(rel) RelationGetPrimaryKeyIndex(rel)
#endif

/*
 * Does this backend hold the lock in exactly this mode?  From 17 on,
 * LockHeldByMe also takes orstronger.
 */
#if PG_VERSION_NUM >= 170000
#define DlockLockHeldByMe(tag, mode) LockHeldByMe((tag), (mode), false)
#else
#define DlockLockHeldByMe(tag, mode) LockHeldByMe((tag), (mode))
#endif

/*
 * The PGPROC of a virtual transaction ID: by backend ID before PostgreSQL
 * 17, by proc number from 17 on.
 */
#if PG_VERSION_NUM >= 170000
#include "storage/procarray.h"
#define DlockVxidGetProc(vxid) ProcNumberGetProc((vxid).procNumber)
#else
#include "storage/sinvaladt.h"
#define DlockVxidGetProc(vxid) BackendIdGetProc((vxid).backendId)
#endif

/*
 * The client's connection (MyProcPort->sock, pq_check_connection) is
 * declared in libpq/libpq-be.h, which includes the GSSAPI headers when the
 * server was built with GSSAPI (Debian's packages do), though dlock uses
 * none of it and those headers need not be installed.  struct Port has the
 * same layout either way (libpq-be.h keeps a void pointer in place of the
 * GSSAPI state, for extensions' sake), so it is included as if built
 * without; only the GSSAPI declarations are left out.
 */
#ifdef ENABLE_GSS
#undef ENABLE_GSS
#include "libpq/libpq.h"
#include "libpq/libpq-be.h"
#define ENABLE_GSS 1
#else
#include "libpq/libpq.h"
#include "libpq/libpq-be.h"
#endif

/*
 * The wait event that ends a latch sleep when the client closes its
 * connection: WL_SOCKET_CLOSED from PostgreSQL 15 on, where the platform
 * can report it.  Before 15 (or without it) a sleeper sees a gone client
 * only when it next wakes up and calls pq_check_connection().
 */
#if PG_VERSION_NUM >= 150000
#include "storage/latch.h"
#define DlockClientClosedEvent() \
	(WaitEventSetCanReportClosed() ? WL_SOCKET_CLOSED : 0)
#else
#define DlockClientClosedEvent() 0
#endif

/*
 * May the current role see the activity of role's sessions: the rule of
 * pg_stat_activity (HAS_PGSTAT_PERMISSIONS in pgstatfuncs.c), the
 * privileges of that role, or of pg_read_all_stats.  Before PostgreSQL 15
 * mere membership of pg_read_all_stats is enough (a NOINHERIT member too);
 * from 15 on its privileges are needed (commit 6198420ad8, not backpatched).
 */
#include "catalog/pg_authid.h"
#include "miscadmin.h"
#include "utils/acl.h"
#if PG_VERSION_NUM >= 150000
#define DlockHasPgstatPermissions(role) \
	(has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS) || \
	 has_privs_of_role(GetUserId(), (role)))
#else
#define DlockHasPgstatPermissions(role) \
	(is_member_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS) || \
	 has_privs_of_role(GetUserId(), (role)))
#endif

/*
 * The virtual transaction ID of a lock-status entry (GetLockStatusData):
 * separate backend and lxid fields before PostgreSQL 17, a
 * VirtualTransactionId (procNumber, localTransactionId) from 17 on.
 */
#if PG_VERSION_NUM >= 170000
#define DlockLockInstanceVxid(vxid_dst, inst) ((vxid_dst) = (inst)->vxid)
#else
#define DlockLockInstanceVxid(vxid_dst, inst) \
	((vxid_dst).backendId = (inst)->backend, \
	 (vxid_dst).localTransactionId = (inst)->lxid)
#endif

/*
 * May the current role end proc, a backend that advertises no role (an
 * autovacuum worker, a background worker connected without one), by
 * pg_signal_backend's rule (signalfuncs.c)?  Such a process counts as a
 * superuser's: only superusers may.  From PostgreSQL 18 on, an autovacuum
 * worker may be ended by the roles with the privileges of
 * pg_signal_autovacuum_worker (a superuser has them), and only by them.
 */
#if PG_VERSION_NUM >= 180000
#include "storage/proc.h"
#include "utils/backend_status.h"
#define DlockMayEndRoleless(proc) \
	(pgstat_get_backend_type_by_proc_number(GetNumberFromPGProc(proc)) == \
	 B_AUTOVAC_WORKER ? \
	 has_privs_of_role(GetUserId(), ROLE_PG_SIGNAL_AUTOVACUUM_WORKER) : \
	 superuser())
#else
#define DlockMayEndRoleless(proc) superuser()
#endif

/*
 * Shared memory is requested from shmem_request_hook from PostgreSQL 15
 * on; before, _PG_init requests it itself (stats.c).
 */
#if PG_VERSION_NUM >= 150000
#define DLOCK_SHMEM_REQUEST_HOOK 1
#endif

#endif							/* DLOCK_COMPAT_H */
